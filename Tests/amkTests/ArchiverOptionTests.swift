import Foundation
import TestSupport
import Testing

extension AMKTests {
    /// The tar-like options of issue 16: --version, excludes, one file system, strip-components,
    /// the overwrite policy, -v and -q, and --json for every command that reports.
    @Suite @MainActor struct ArchiverOptions {
        let tree: TestTree

        init() throws {
            tree = try TestTree()
            try tree.write("d/a.txt", "alpha\n")
            try tree.write("d/main.o", "object\n")
            try tree.write("d/sub/b.txt", "beta\n")
            try tree.write("d/sub/c.o", "object\n")
            try tree.write("d/.git/HEAD", "ref\n")
            try tree.write("d/build/out.bin", "out\n")
        }

        func amk(_ arguments: String...) throws -> AMKProcess.Result {
            try AMKProcess.run(arguments, in: tree.root)
        }

        func listed(_ archive: String) throws -> Set<String> {
            let result = try amk("list", archive)
            #expect(result.status == 0, "\(result.stderr)")
            return Set(result.stdout.split(separator: "\n").map(String.init))
        }

        func json(_ result: AMKProcess.Result) throws -> [String: Any] {
            #expect(result.status == 0, "\(result.stderr)")
            return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        }

        /// `amk pack .` (and `..`) store the folder they are under its own name; `/` has none.
        @Test func dotAndDotDotArePackedUnderTheFoldersName() throws {
            let dot = try AMKProcess.run(["pack", ".", "-o", "../dot.tar.xz", "-q"], in: tree.url("d/sub"))
            #expect(dot.status == 0, "\(dot.stderr)")
            #expect(try listed("d/dot.tar.xz") == ["sub/", "sub/b.txt", "sub/c.o"])
            let up = try AMKProcess.run(["pack", "..", "-o", "../../up.tar.xz", "-q", "--exclude", "*.tar.xz"], in: tree.url("d/sub"))
            #expect(up.status == 0, "\(up.stderr)")
            #expect(try listed("up.tar.xz").isSuperset(of: ["d/", "d/a.txt", "d/sub/", "d/sub/b.txt", "d/.git/HEAD"]))
            #expect(try listed("up.tar.xz").allSatisfy { $0.hasPrefix("d/") })
            // Through a link, the folder's own name, not the link's.
            #expect(symlink("d/sub", tree.path("alias")) == 0)
            let linked = try AMKProcess.run(["pack", "alias/.", "-o", "linked.tar.xz", "-q"], in: tree.root)
            #expect(linked.status == 0, "\(linked.stderr)")
            #expect(try listed("linked.tar.xz") == ["sub/", "sub/b.txt", "sub/c.o"])
            let root = try amk("pack", "/", "-o", "root.tar.xz")
            #expect(root.status != 0)
            #expect(root.stderr.contains("'/' is the root folder, which has no name"), "\(root.stderr)")
            #expect(!tree.exists("root.tar.xz"))
        }

        /// `AMK_LOG=debug` turns the libraries' swift-log diagnostics on, on standard error;
        /// without it they stay silent, and `-v` lists the members alone, as tar's does (it
        /// printed the engine's debug lines and its warnings twice).
        @Test func theEnginesDiagnosticsGoToStandardErrorWhenAsked() throws {
            let quiet = try amk("pack", "d", "-o", "q.tar.xz", "--no-progress")
            #expect(quiet.status == 0 && quiet.stderr.isEmpty, "\(quiet.stderr)")
            #expect(mkfifo(tree.path("d/fifo"), 0o644) == 0)
            let names = try amk("pack", "d", "-o", "n.tar.xz", "-v", "--no-progress")
            #expect(names.status == 0)
            #expect(!names.stderr.contains("amk.pack"), "\(names.stderr)")
            #expect(names.stderr == "amk: warning: d/fifo: skipped: FIFOs are not archived\n", "once: \(names.stderr)")
            #expect(names.stdout.split(separator: "\n").contains("d/a.txt"))
            // A folder under its name in the archive, as `tar -cv` and `amk list` print it.
            #expect(names.stdout.split(separator: "\n").contains("d/sub/"), "\(names.stdout)")
            #expect(!names.stdout.split(separator: "\n").contains("d/sub"), "\(names.stdout)")
            let extractedNames = try amk("extract", "n.tar.xz", "-C", "xn", "-v")
            #expect(extractedNames.status == 0 && extractedNames.stderr.isEmpty, "\(extractedNames.stderr)")
            let packed = try AMKProcess.run(
                ["pack", "d", "-o", "a.tar.xz", "-v", "--no-progress"], in: tree.root, environment: ["AMK_LOG": "debug"])
            #expect(packed.status == 0)
            let logLines = packed.stderr.split(separator: "\n").filter { $0.contains("amk.pack") }
            #expect(logLines.contains { $0.contains(" debug ") && $0.hasSuffix("packing") }, "\(packed.stderr)")
            // The summary line says "packed 10 entries, ..."; the log carries the same count.
            let count = try #require(packed.stdout.split(separator: "\n").last?.split(separator: " ").dropFirst().first)
            #expect(
                logLines.contains { $0.contains(" info ") && $0.contains("entries=\(count) ") && $0.hasSuffix("packed") },
                "\(packed.stderr)")
            let extracted = try AMKProcess.run(["extract", "a.tar.xz", "-C", "x"], in: tree.root, environment: ["AMK_LOG": "DEBUG"])
            #expect(extracted.status == 0)
            #expect(extracted.stderr.contains("amk.extract: destination=x"), "\(extracted.stderr)")
            #expect(!extracted.stdout.contains("amk.extract"), "logs never go to standard output")
        }

        /// --memory bounds the encoders and chunks together: fewer workers when it is short
        /// (said with -v), refused when one worker does not fit, before anything is written.
        @Test func memoryBudget() throws {
            let refused = try amk("pack", "d", "-o", "m.tar.xz", "--memory", "64M", "--no-progress")
            #expect(refused.status != 0)
            #expect(refused.stderr.contains("cannot hold one worker"), "\(refused.stderr)")
            #expect(!FileManager.default.fileExists(atPath: tree.root.appendingPathComponent("m.tar.xz").path))

            let fewer = try amk("pack", "d", "-o", "m.tar.xz", "--memory", "170M", "-j", "2", "-v", "--no-progress")
            #expect(fewer.status == 0, "\(fewer.stderr)")
            #expect(fewer.stderr.contains("fewer workers to stay within the memory budget"), "\(fewer.stderr)")
            #expect(fewer.stderr.contains("workers=1"), "\(fewer.stderr)")
            #expect(try listed("m.tar.xz").contains("d/a.txt"))
        }

        @Test func version() throws {
            let result = try amk("--version")
            #expect(result.status == 0)
            #expect(result.stdout == "AppMigration 0.1.0\n")
        }

        @Test func excludePatternsAndExcludeFrom() throws {
            let result = try amk("pack", "d", "-o", "a.tar.xz", "--exclude", "*.o", "--exclude", ".git", "--exclude", "d/build/*")
            #expect(result.status == 0, "\(result.stderr)")
            #expect(try listed("a.tar.xz") == ["d/", "d/a.txt", "d/sub/", "d/sub/b.txt", "d/build/"])

            try tree.write("patterns", "*.txt\n\nbuild\n")
            #expect(try amk("pack", "d", "-o", "b.tar.xz", "--exclude-from", "patterns", "--exclude", ".git").status == 0)
            #expect(try listed("b.tar.xz") == ["d/", "d/main.o", "d/sub/", "d/sub/c.o"])
            // Windows line ends: "\r\n" is one Character, and the file was read as one pattern.
            try tree.write("patterns.crlf", "*.txt\r\nbuild\r\n")
            #expect(try amk("pack", "d", "-o", "c.tar.xz", "--exclude-from", "patterns.crlf", "--exclude", ".git").status == 0)
            #expect(try listed("c.tar.xz") == ["d/", "d/main.o", "d/sub/", "d/sub/c.o"])
            let folder = try amk("pack", "d", "-o", "e.tar.xz", "--exclude-from", "d")
            #expect(folder.status == 2 && folder.stderr.contains("it is a folder"), "\(folder.stderr)")

            let missing = try amk("pack", "d", "-o", "c.tar.xz", "--exclude-from", "nonexistent")
            #expect(missing.status == 2, "\(missing.stderr)")
            #expect(missing.stderr.contains("No such file or directory"), "\(missing.stderr)")
        }

        /// `--exclude-from -` reads standard input, as tar's `-X -` and amk's own `-T -` do (it
        /// looked for a file named `-`), and a file of names or patterns that cannot be read is
        /// said in the system's words: a closed standard input gave "The operation could not be
        /// completed. (NSCocoaErrorDomain error 256.)".
        @Test func patternsAndNamesComeFromStandardInputAndFailInPlainWords() throws {
            let fromInput = try ShellPipeline.run(
                "printf '*.txt\\nbuild\\n' | \"$AMK\" pack d -o s.tar.xz --exclude-from - --exclude .git", in: tree.root)
            #expect(fromInput.status == 0, "\(fromInput.stderr)")
            #expect(try listed("s.tar.xz") == ["d/", "d/main.o", "d/sub/", "d/sub/c.o"])
            let closed = try ShellPipeline.run("\"$AMK\" list s.tar.xz -T - <&- || echo status=$?", in: tree.root)
            #expect(closed.stdout.contains("status=2"), "\(closed.stdout) \(closed.stderr)")
            #expect(closed.stderr.contains("cannot read the member names in '-'"), "\(closed.stderr)")
            #expect(!closed.stderr.contains("NSCocoaErrorDomain") && !closed.stderr.contains("could not be completed"), "\(closed.stderr)")
        }

        @Test(.enabled(if: OneFileSystem.canMount, "needs to mount a tmpfs (root)"))
        func oneFileSystemStoresTheMountPointOnly() throws {
            try tree.mkdir("d/mnt")
            let mount = try OneFileSystem.mountTmpfs(at: tree.path("d/mnt"))
            defer { OneFileSystem.unmount(mount) }
            try tree.write("d/mnt/inside.txt", "elsewhere\n")
            #expect(try amk("pack", "d", "-o", "all.tar.xz").status == 0)
            #expect(try listed("all.tar.xz").contains("d/mnt/inside.txt"))
            #expect(try amk("pack", "d", "-o", "one.tar.xz", "--one-file-system").status == 0)
            let one = try listed("one.tar.xz")
            #expect(one.contains("d/mnt/"))
            #expect(!one.contains("d/mnt/inside.txt"))
            #expect(one.contains("d/sub/b.txt"))
        }

        @Test func stripComponents() throws {
            #expect(try amk("pack", "d", "-o", "a.tar.xz").status == 0)
            let result = try amk("extract", "a.tar.xz", "--strip-components", "1", "-C", "x")
            #expect(result.status == 0, "\(result.stderr)")
            #expect(try String(contentsOfFile: tree.path("x/a.txt"), encoding: .utf8) == "alpha\n")
            #expect(try String(contentsOfFile: tree.path("x/sub/b.txt"), encoding: .utf8) == "beta\n")
            #expect(!tree.exists("x/d"))
            let two = try amk("extract", "a.tar.xz", "--strip-components", "2", "-C", "y")
            #expect(two.status == 0, "\(two.stderr)")
            #expect(tree.exists("y/b.txt") && tree.exists("y/HEAD") && !tree.exists("y/a.txt"))
            #expect(try amk("extract", "a.tar.xz", "--strip-components", "-1", "-C", "z").status == 2)
        }

        @Test func keepOldFilesRefusesAndOverwriteReplaces() throws {
            #expect(try amk("pack", "d", "-o", "a.tar.xz").status == 0)
            try tree.write("x/d/a.txt", "mine\n")
            let kept = try amk("extract", "a.tar.xz", "-C", "x", "--keep-old-files")
            #expect(kept.status == 1)
            #expect(kept.stderr.contains("d/a.txt") && kept.stderr.contains("already exists"), "\(kept.stderr)")
            #expect(kept.stderr.hasSuffix("amk: 1 member was not extracted (see above)\n"), "\(kept.stderr)")
            #expect(try String(contentsOfFile: tree.path("x/d/a.txt"), encoding: .utf8) == "mine\n")
            // The rest is extracted, as GNU tar -k extracts it.
            #expect(try String(contentsOfFile: tree.path("x/d/sub/b.txt"), encoding: .utf8) == "beta\n")

            let replaced = try amk("extract", "a.tar.xz", "-C", "x", "--overwrite")
            #expect(replaced.status == 0, "\(replaced.stderr)")
            #expect(try String(contentsOfFile: tree.path("x/d/a.txt"), encoding: .utf8) == "alpha\n")
            // The default is tar's: replace.
            try tree.write("x/d/a.txt", "mine again\n")
            #expect(try amk("extract", "a.tar.xz", "-C", "x").status == 0)
            #expect(try String(contentsOfFile: tree.path("x/d/a.txt"), encoding: .utf8) == "alpha\n")
            #expect(try amk("extract", "a.tar.xz", "-C", "x", "--overwrite", "--keep-old-files").status == 2)
        }

        @Test func verboseAndQuiet() throws {
            let packed = try amk("pack", "d", "-o", "a.tar.xz", "-v")
            #expect(packed.status == 0, "\(packed.stderr)")
            let lines = packed.stdout.split(separator: "\n").map(String.init)
            #expect(lines.contains("d/sub/c.o"))
            #expect(lines.last?.hasPrefix("packed 10 entries") == true, "\(lines)")

            let quiet = try amk("pack", "d", "-o", "b.tar.xz", "-q")
            #expect(quiet.status == 0 && quiet.stdout.isEmpty && quiet.stderr.isEmpty)

            let extracted = try amk("extract", "a.tar.xz", "-C", "x", "-v")
            #expect(extracted.status == 0, "\(extracted.stderr)")
            let names = extracted.stdout.split(separator: "\n").map(String.init)
            #expect(names.contains("d/a.txt") && names.contains("d/build/out.bin"), "\(names)")
            #expect(names.last?.hasPrefix("extracted 10 entries") == true)

            let silent = try amk("extract", "a.tar.xz", "-C", "y", "-q")
            #expect(silent.status == 0 && silent.stdout.isEmpty)
            let verified = try amk("verify", "-q", "a.tar.xz")
            #expect(verified.status == 0 && verified.stdout.isEmpty)
            let long = try amk("list", "-v", "a.tar.xz")
            #expect(long.stdout.contains("-rw-r--r--"), "\(long.stdout)")
        }

        /// With --json, standard output holds the JSON document alone (`| jq` reads it): -v's
        /// names go to standard error, as with `-o -` and `-O`. They came first on standard output.
        @Test func verboseWithJSONListsOnStandardError() throws {
            let packed = try amk("pack", "d", "-o", "a.tar.xz", "-v", "--json", "--no-progress")
            #expect((try json(packed)["entries"] as? NSNumber)?.intValue == 10)
            #expect(packed.stderr.split(separator: "\n").contains("d/sub/c.o"), "\(packed.stderr)")
            let extracted = try amk("extract", "a.tar.xz", "-C", "x", "-v", "--json", "--no-progress")
            #expect((try json(extracted)["entries"] as? NSNumber)?.intValue == 10)
            #expect(extracted.stderr.split(separator: "\n").contains("d/sub/c.o"), "\(extracted.stderr)")
        }

        @Test func jsonForPackExtractVerifyInfoAndSalvage() throws {
            let pack = try json(try amk("pack", "d", "-o", "a.tar.xz", "--json"))
            #expect((pack["entries"] as? NSNumber)?.intValue == 10)
            #expect(pack["archive"] as? String == "a.tar.xz")
            for key in ["fileBytes", "tarBytes", "archiveBytes", "ratio", "blocks", "storedBlocks", "x86Blocks", "seconds"] {
                #expect(pack[key] is NSNumber, "\(key)")
            }
            #expect((pack["warnings"] as? [Any])?.isEmpty == true)

            let extract = try json(try amk("extract", "a.tar.xz", "-C", "x", "--json"))
            #expect((extract["entries"] as? NSNumber)?.intValue == 10)
            #expect((extract["bytes"] as? NSNumber)?.intValue == 33)
            #expect(extract["directory"] as? String == "x")

            let verify = try json(try amk("verify", "--json", "a.tar.xz"))
            #expect(verify["ok"] as? Bool == true && verify["error"] is NSNull)
            #expect((verify["members"] as? NSNumber)?.intValue == 10)

            let info = try json(try amk("info", "--json", "a.tar.xz"))
            #expect(info["indexed"] as? Bool == true)
            #expect((info["metadata"] as? [String: String])?["writer"] == "AppMigration 0.1.0")
            #expect(
                (info["fileSize"] as? NSNumber)?.intValue
                    == (try FileManager.default.attributesOfItem(atPath: tree.path("a.tar.xz"))[.size] as? Int))

            let salvage = try json(try amk("salvage", "--json", "a.tar.xz", "-C", "s"))
            #expect(salvage["whole"] as? Bool == true)
            #expect((salvage["recovered"] as? [String])?.count == 10)
            #expect(salvage["damageOffset"] is NSNull && salvage["stopped"] is NSNull)
        }

        @Test func verifyJSONReportsAFailure() throws {
            #expect(try amk("pack", "d", "-o", "a.tar.xz").status == 0)
            var bytes = try Data(contentsOf: tree.url("a.tar.xz"))
            bytes = bytes.prefix(bytes.count / 2)
            try bytes.write(to: tree.url("cut.tar.xz"))
            let result = try amk("verify", "--json", "cut.tar.xz")
            #expect(result.status == 1)
            let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
            #expect(object["ok"] as? Bool == false)
            #expect(object["error"] is String)
            #expect(object["members"] is NSNull)
        }

        @Test func helpListsEveryOptionAndExamples() throws {
            let help = try amk("help", "pack")
            #expect(help.status == 0)
            for option in ["--exclude", "--exclude-from", "--one-file-system", "--verbose", "--quiet", "--json", "--progress", "Examples:"]
            {
                #expect(help.stdout.contains(option), "\(option)")
            }
            let extract = try amk("help", "extract")
            for option in ["--strip-components", "--keep-old-files", "--overwrite", "--to-stdout", "--verbose", "--json", "Examples:"] {
                #expect(extract.stdout.contains(option), "\(option)")
            }
            for command in ["list", "verify", "info", "salvage", "export", "import", "send", "receive", "demo"] {
                let text = try amk("help", command)
                #expect(text.status == 0 && text.stdout.contains("Examples:"), "amk help \(command)")
            }
            let completion = try amk("--generate-completion-script", "bash")
            #expect(completion.status == 0 && completion.stdout.contains("--strip-components"))
        }
    }
}

/// Mounting a tmpfs inside a test tree, for `--one-file-system` (possible as root only).
enum OneFileSystem {
    static let canMount: Bool = {
        guard let directory = try? TemporaryDirectory(prefix: "amk-mount-probe"),
            let mounted = try? mountTmpfs(at: directory.path)
        else { return false }
        withExtendedLifetime(directory) { unmount(mounted) }
        return true
    }()

    static func mountTmpfs(at path: String) throws -> String {
        guard run("/bin/mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", path]) == 0 else {
            throw CocoaError(.fileWriteNoPermission)
        }
        return path
    }

    static func unmount(_ path: String) { _ = run("/bin/umount", [path]) }

    private static func run(_ tool: String, _ arguments: [String]) -> Int32 {
        (try? ChildProcess.run(tool, arguments))?.status ?? -1
    }
}

extension AMKTests.ArchiverOptions {
    @Test func progressForcedOnAPipe() throws {
        try tree.write("d/big.bin", TestTree.noise(count: 3 << 20, seed: 5))
        #expect(try amk("pack", "d", "-o", "a.tar.xz", "--chunk-size", "1M", "--progress").status == 0)
        let extracted = try amk("extract", "a.tar.xz", "-C", "x", "--progress")
        #expect(extracted.status == 0, "\(extracted.stderr)")
        #expect(extracted.stderr.contains("extracting") && extracted.stderr.contains("\r"), "\(extracted.stderr.debugDescription)")
        let quiet = try amk("extract", "a.tar.xz", "-C", "y", "--no-progress")
        #expect(quiet.stderr.isEmpty)
        let verified = try amk("verify", "a.tar.xz", "--progress")
        #expect(
            verified.status == 0 && verified.stderr.contains("verifying"),
            "\(verified.stderr.debugDescription)")
        #expect(verified.stdout == "OK: 11 members verified\n")
        let salvaged = try amk("salvage", "a.tar.xz", "-C", "s", "--progress")
        #expect(salvaged.status == 0 && salvaged.stderr.contains("salvaging"), "\(salvaged.stderr.debugDescription)")
    }
}

extension AMKTests.ArchiverOptions {
    /// export, import, send and receive show the host's progress as a bar too (forced on a pipe
    /// here), erased before their summary; --no-progress keeps standard error clean.
    @Test func hostCommandsShowProgress() throws {
        // Text that takes LZMA a while (random bytes would be stored at once, before a bar is due).
        try tree.write("c/Documents/log.txt", (0..<400_000).map { "entry \($0 &* 2_654_435_761 % 1_000_003) of the log\n" }.joined())
        let exported = try amk("export", "--container", "c", "--extension", "files", "-o", "e.tar.xz", "--progress")
        #expect(exported.status == 0, "\(exported.stderr)")
        #expect(exported.stderr.contains("\rexporting [") && exported.stderr.hasSuffix("\r\u{1B}[K"), "\(exported.stderr.debugDescription)")
        let imported = try amk("import", "e.tar.xz", "--container", "i", "--extension", "files", "--progress")
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(imported.stderr.contains("\rimporting [") && imported.stderr.contains("%  ETA"), "\(imported.stderr.debugDescription)")
        let quiet = try amk("import", "e.tar.xz", "--container", "j", "--extension", "files", "--no-progress")
        #expect(quiet.status == 0 && quiet.stderr.isEmpty, "\(quiet.stderr.debugDescription)")

        let receiver = try TransferProcess.startReceiver(container: tree.path("r"), extra: ["--progress"])
        let sent = try amk("send", "--container", "c", "--to", receiver.endpoint, "--code", receiver.code, "--preset", "0", "--progress")
        let received = try AMKProcess.collect(receiver.process)
        #expect(sent.status == 0 && sent.stderr.contains("\rsending ["), "\(sent.stderr.debugDescription)")
        #expect(received.status == 0 && received.stderr.contains("\rreceiving ["), "\(received.stderr.debugDescription)")
    }
}
