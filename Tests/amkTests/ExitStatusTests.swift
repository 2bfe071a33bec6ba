import Foundation
import TestSupport
import Testing

extension AMKTests {
    /// 0 success, 1 failure, 2 usage; errors as one `amk: ...` line naming what failed.
    @Suite @MainActor struct ExitStatus {
        let tree: TestTree

        init() throws {
            tree = try TestTree()
            try tree.write("src/a.txt", "a\n")
        }

        /// `pack -o FILE` replaced a file this user may not write (their own read-only archive, or
        /// root's in a folder open to all): the new archive was renamed over it, which asks only
        /// for the folder. As `tar -cf` does, it is refused, and the file is kept.
        @Test(.enabled(if: geteuid() != 0 || FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")))
        func packRefusesADestinationThisUserMayNotWrite() throws {
            chmod(tree.path("."), 0o755)
            chmod(tree.path("src"), 0o755)
            chmod(tree.path("src/a.txt"), 0o644)
            try FileManager.default.createDirectory(atPath: tree.path("out"), withIntermediateDirectories: true)
            chmod(tree.path("out"), 0o777)
            let archive = tree.path("out/old.tar.xz")
            try tree.write("out/old.tar.xz", "precious\n")
            chmod(archive, 0o444)
            let arguments = ["pack", tree.path("src"), "-o", archive, "-q"]
            let packed = try AMKProcess.runUnprivileged(arguments)
            #expect(packed.status == 1, "\(packed.stderr)")
            #expect(packed.stderr.contains("may not write"), "\(packed.stderr)")
            #expect(try String(contentsOfFile: archive, encoding: .utf8) == "precious\n")
            #expect(try FileManager.default.contentsOfDirectory(atPath: tree.path("out")) == ["old.tar.xz"])
            // A file it may write is replaced, as before.
            chmod(archive, 0o666)
            let again = try AMKProcess.runUnprivileged(arguments)
            #expect(again.status == 0, "\(again.stderr)")
            #expect(try AMKProcess.run(["list", archive]).stdout.contains("a.txt"))
        }

        @Test(arguments: [
            ["pack", "SRC", "-o", "OUT", "--preset", "12"],
            ["pack", "SRC", "-o", "OUT", "--preset", "-1"],
            ["pack", "SRC"],
            ["pack", "-o", "OUT"],
            ["pack", "SRC", "-o", "OUT", "--chunk-size", "16X"],
            ["pack", "SRC", "-o", "OUT", "--chunk-size", "512K"],
            ["pack", "SRC", "-o", "OUT", "--jobs", "0"],
            ["pack", "SRC", "-o", "OUT", "--nice-len", "1"],
            ["pack", "SRC", "-o", "OUT", "--nice-len", "274"],
            ["pack", "SRC", "SRC", "-o", "OUT"],
            ["list", "--long", "--json", "OUT"],
            ["list"],
            ["salvage", "OUT"],
            ["frobnicate"],
            [],
            // A folder named `-dash` given without `--`, and tar's habits: short options, one of
            // them `h`, which ArgumentParser answered with the help and status 0.
            ["pack", "-dash", "-o", "OUT"],
            ["extract", "-xvhf", "OUT"],
            ["list", "-lh", "OUT"],
            // `-` where a file is needed: it made or read a file named `-`.
            ["export", "--container", "SRC", "-o", "-"],
            ["import", "-", "--container", "SRC"],
            ["salvage", "-", "-C", "SRC"]
        ])
        func usageErrorsExit2(arguments: [String]) throws {
            let resolved = arguments.map { $0 == "SRC" ? tree.path("src") : $0 == "OUT" ? tree.path("out.tar.xz") : $0 }
            let result = try AMKProcess.run(resolved)
            #expect(result.status == 2, "\(arguments): \(result.stderr)")
            #expect(!result.stderr.isEmpty)
            #expect(result.stdout.isEmpty)
            #expect(!tree.exists("out.tar.xz"))
        }

        /// A member that cannot be written (`../evil`, an absolute name, a hard link to nothing) is
        /// named and passed over, as GNU tar and bsdtar pass over it: the members around it are
        /// extracted, from a file and from a pipe, and the status is 1 (amk stopped at the first).
        @Test(.enabled(if: ChildProcess.lookUp("python3") != nil && ChildProcess.lookUp("xz") != nil, "needs python3 and xz"))
        func aMemberThatFailsIsPassedOverAndTheStatusIs1() throws {
            let made = try ShellPipeline.run(
                """
                python3 -c "
                import tarfile, io
                with tarfile.open('bad.tar', 'w', format=tarfile.PAX_FORMAT) as t:
                    for name, data in [('g1', b'one'), ('../evil', b'evil'), ('/abs-amk-test', b'abs'), ('g2', b'two')]:
                        m = tarfile.TarInfo(name); m.size = len(data); t.addfile(m, io.BytesIO(data))
                    h = tarfile.TarInfo('h'); h.type = tarfile.LNKTYPE; h.linkname = 'missing'; t.addfile(h)
                    m = tarfile.TarInfo('g3'); m.size = 5; t.addfile(m, io.BytesIO(b'three'))
                " && xz bad.tar
                """, in: tree.root)
            try #require(made.status == 0, "\(made.stderr)")
            for (name, command) in [("x", "\"$AMK\" extract bad.tar.xz -C x"), ("y", "cat bad.tar.xz | \"$AMK\" extract - -C y")] {
                let result = try ShellPipeline.run(command, in: tree.root)
                #expect(result.status == 1, "\(command): \(result.stderr)")
                #expect(try tree.read("\(name)/g1") == Array("one".utf8))
                #expect(try tree.read("\(name)/g2") == Array("two".utf8))
                #expect(try tree.read("\(name)/g3") == Array("three".utf8))
                #expect(!tree.exists("evil") && !tree.exists("\(name)/h") && !FileManager.default.fileExists(atPath: "/abs-amk-test"))
                let lines = result.stderr.split(separator: "\n").map(String.init)
                #expect(lines.contains("amk: member '../evil': path with '..' refused"), "\(result.stderr)")
                #expect(lines.contains { $0.hasPrefix("amk: member '/abs-amk-test': absolute path refused") }, "\(result.stderr)")
                #expect(lines.contains { $0.contains("member 'h': hard link to 'missing'") }, "\(result.stderr)")
                #expect(lines.last == "amk: 3 members were not extracted (see above)", "\(result.stderr)")
                #expect(result.stdout.hasPrefix("extracted 3 entries"), "\(result.stdout)")
            }
            let json = try AMKProcess.run(["extract", "bad.tar.xz", "-C", "z", "--json"], in: tree.root)
            #expect(json.status == 1)
            let document = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
            #expect(document["failedMembers"] as? Int == 3 && document["entries"] as? Int == 3, "\(json.stdout)")
            let failures = try #require(document["failures"] as? [[String: Any]])
            #expect(failures.compactMap { $0["member"] as? String } == ["../evil", "/abs-amk-test", "h"], "\(json.stdout)")
        }

        /// A name that selects nothing is named ("no such member") after the rest is extracted,
        /// and the status is 1, as GNU tar's "Not found in archive": from an amk archive, from a
        /// pipe and from a plain `tar | xz` file alike. From a pipe or a foreign file amk exited 0
        /// without a word; from an indexed file it refused the whole and extracted nothing.
        @Test(.enabled(if: ChildProcess.lookUp("tar") != nil && ChildProcess.lookUp("xz") != nil, "needs tar and xz"))
        func aNameThatSelectsNothingIsNamedAndTheRestExtracted() throws {
            try tree.write("src/b.txt", "b\n")
            #expect(try AMKProcess.run(["pack", "src", "-o", "a.tar.xz"], in: tree.root).status == 0)
            let made = try ShellPipeline.run("tar -cJf f.tar.xz src", in: tree.root)
            try #require(made.status == 0, "\(made.stderr)")
            let commands = [
                "\"$AMK\" extract a.tar.xz src/a.txt nonexist -C x1", "cat a.tar.xz | \"$AMK\" extract - src/a.txt nonexist -C x2",
                "\"$AMK\" extract f.tar.xz src/a.txt nonexist -C x3", "cat f.tar.xz | \"$AMK\" extract - src/a.txt nonexist -C x4"
            ]
            for (index, command) in commands.enumerated() {
                let result = try ShellPipeline.run(command, in: tree.root)
                #expect(result.status == 1, "\(command): \(result.stderr)")
                #expect(try tree.read("x\(index + 1)/src/a.txt") == Array("a\n".utf8), "\(command)")
                #expect(!tree.exists("x\(index + 1)/src/b.txt"), "\(command)")
                #expect(result.stderr.contains("member 'nonexist': no such member"), "\(command): \(result.stderr)")
                #expect(result.stdout.hasPrefix("extracted 1 entry"), "\(command): \(result.stdout)")
            }
            let json = try AMKProcess.run(["extract", "a.tar.xz", "src/a.txt", "nonexist", "src/", "-C", "y", "--json"], in: tree.root)
            #expect(json.status == 1)
            let document = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
            #expect(document["notFound"] as? [String] == ["nonexist"], "\(json.stdout)")
            // Doubled slashes select what single ones do, as in GNU tar and bsdtar.
            let doubled = try AMKProcess.run(["extract", "a.tar.xz", "src//a.txt", "-C", "d"], in: tree.root)
            #expect(doubled.status == 0 && tree.exists("d/src/a.txt"), "\(doubled.stderr)")
            // Nothing selected at all: refused before anything is made, as before.
            let none = try AMKProcess.run(["extract", "a.tar.xz", "nonexist", "-C", "z"], in: tree.root)
            #expect(none.status == 1 && !tree.exists("z"), "\(none.stderr)")
            // And with --json, every name is in notFound (it was empty, the line only in error).
            for archive in ["a.tar.xz", "f.tar.xz"] {
                let noneJSON = try AMKProcess.run(
                    ["extract", archive, "nonexist", "other/", "nonexist", "-C", "z", "--json"], in: tree.root)
                #expect(noneJSON.status == 1 && !tree.exists("z"), "\(noneJSON.stderr)")
                let report = try #require(try JSONSerialization.jsonObject(with: Data(noneJSON.stdout.utf8)) as? [String: Any])
                #expect(report["notFound"] as? [String] == ["nonexist", "other/"], "\(archive): \(noneJSON.stdout)")
                #expect(report["error"] is String, "\(archive): \(noneJSON.stdout)")
            }
        }

        /// Members that failed before damage ended the extraction are named too, before the
        /// damage: they went unnamed behind it (an immutable file kept its old content without a
        /// word). From a pipe, the advice says to save the stream first, as salvage reads a file.
        @Test(.enabled(if: ChildProcess.lookUp("python3") != nil && ChildProcess.lookUp("xz") != nil, "needs python3 and xz"))
        func failuresBeforeDamageAreNamed() throws {
            let made = try ShellPipeline.run(
                """
                python3 -c "
                import tarfile, io, random
                random.seed(7)
                with tarfile.open('late.tar', 'w', format=tarfile.PAX_FORMAT) as t:
                    for name, data in [('g1', b'one'), ('../evil', b'evil'), ('big.bin', bytes(random.getrandbits(8) for _ in range(400000)))]:
                        m = tarfile.TarInfo(name); m.size = len(data); t.addfile(m, io.BytesIO(data))
                " && xz --block-size=65536 -T1 late.tar && python3 -c "
                b = bytearray(open('late.tar.xz', 'rb').read()); b[len(b) - 30000] ^= 0x55; open('late.tar.xz', 'wb').write(b)
                "
                """, in: tree.root)
            try #require(made.status == 0, "\(made.stderr)")
            for (command, hint) in [
                ("\"$AMK\" extract late.tar.xz -C x", "'amk salvage ARCHIVE -C DIR'"),
                ("cat late.tar.xz | \"$AMK\" extract - -C y", "save it to a file, then 'amk salvage FILE -C DIR'")
            ] {
                let result = try ShellPipeline.run(command, in: tree.root)
                #expect(result.status == 1, "\(command): \(result.stderr)")
                let lines = result.stderr.split(separator: "\n").map(String.init)
                #expect(lines.first == "amk: member '../evil': path with '..' refused", "\(command): \(result.stderr)")
                #expect(lines.last?.contains(hint) == true, "\(command): \(result.stderr)")
            }
        }

        /// When every member is refused, the `-C` folders made for the extraction are removed
        /// again, as after any extraction that writes nothing.
        @Test(.enabled(if: ChildProcess.lookUp("python3") != nil && ChildProcess.lookUp("xz") != nil, "needs python3 and xz"))
        func theDestinationMadeForAnExtractionThatWroteNothingIsRemoved() throws {
            let made = try ShellPipeline.run(
                """
                python3 -c "
                import tarfile, io
                with tarfile.open('bad.tar', 'w', format=tarfile.PAX_FORMAT) as t:
                    for name in ['../a', '/amk-test-b']:
                        m = tarfile.TarInfo(name); m.size = 1; t.addfile(m, io.BytesIO(b'x'))
                " && xz bad.tar
                """, in: tree.root)
            try #require(made.status == 0, "\(made.stderr)")
            for command in ["\"$AMK\" extract bad.tar.xz -C new/dir", "cat bad.tar.xz | \"$AMK\" extract - -C new/dir"] {
                let result = try ShellPipeline.run(command, in: tree.root)
                #expect(result.status == 1, "\(command): \(result.stderr)")
                #expect(!tree.exists("new"), "\(command)")
            }
        }

        /// A `.tar.gz` (or a plain tar) handed to amk is named for what it is, from a file and from a pipe.
        @Test(arguments: [("gzip", "gzip-compressed data"), ("cat", "an uncompressed tar archive")])
        func anArchiveThatIsNotXZIsNamed(_ compressor: String, _ name: String) throws {
            let made = try ShellPipeline.run("tar -cf - src | \(compressor) > a.tar.other", in: tree.root)
            try #require(made.status == 0, "\(made.stderr)")
            for arguments in [["list", "a.tar.other"], ["extract", "a.tar.other", "-C", "x"], ["info", "a.tar.other"]] {
                let result = try AMKProcess.run(arguments, in: tree.root)
                #expect(result.status == 1, "\(arguments)")
                #expect(result.stderr.contains("this looks like \(name)"), "\(arguments): \(result.stderr)")
                #expect(result.stderr.contains("amk reads xz-compressed tar archives (.tar.xz)"), "\(arguments): \(result.stderr)")
                // Not a damaged archive: salvage would recover nothing, and is not offered.
                #expect(!result.stderr.contains("salvage"), "\(arguments): \(result.stderr)")
            }
            try tree.write("empty.tar.xz", "")
            let empty = try AMKProcess.run(["extract", "empty.tar.xz", "-C", "e"], in: tree.root)
            #expect(empty.status == 1 && !empty.stderr.contains("salvage"), "\(empty.stderr)")
            let piped = try ShellPipeline.run("cat a.tar.other | \"$AMK\" extract - -C y", in: tree.root)
            #expect(piped.status == 1)
            #expect(piped.stderr.contains("this looks like \(name)"), "\(piped.stderr)")
            // Named for what it is, not called damaged (a short one was, told at its end).
            #expect(!piped.stderr.contains("damaged") && !piped.stderr.contains("salvage"), "\(piped.stderr)")
            #expect(!tree.exists("x") && !tree.exists("y"), "no destination is left behind")
        }

        @Test func presetMessageSaysWhatIsWrong() throws {
            let result = try AMKProcess.run(
                ["pack", tree.path("src"), "-o", tree.path("out.tar.xz"), "--preset", "12"])
            #expect(result.status == 2)
            #expect(result.stderr.contains("--preset must be 0 to 9, not 12"), "\(result.stderr)")
        }

        @Test func niceLengthMessageSaysWhatIsWrongAndAValidOnePacks() throws {
            let refused = try AMKProcess.run(["pack", tree.path("src"), "-o", tree.path("out.tar.xz"), "--nice-len", "300"])
            #expect(refused.status == 2)
            #expect(refused.stderr.contains("--nice-len must be 2 to 273, not 300"), "\(refused.stderr)")
            let packed = try AMKProcess.run(["pack", tree.path("src"), "-o", tree.path("out.tar.xz"), "--nice-len", "64", "-q"])
            #expect(packed.status == 0, "\(packed.stderr)")
            #expect(try AMKProcess.run(["verify", tree.path("out.tar.xz")]).status == 0)
        }

        /// A usage error found while a command runs (here an unreadable `--exclude-from`) shows
        /// that command's usage, as one found while parsing does; it showed the root's
        /// (`Usage: amk <subcommand>`).
        @Test func aUsageErrorFromARunningCommandShowsItsUsage() throws {
            let result = try AMKProcess.run([
                "pack", tree.path("src"), "-o", tree.path("out.tar.xz"), "--exclude-from", tree.path("none.txt")
            ])
            #expect(result.status == 2)
            #expect(result.stderr.hasPrefix("Error: Cannot read --exclude-from"), "\(result.stderr)")
            #expect(result.stderr.contains("\nUsage: amk pack [<options>]"), "\(result.stderr)")
            #expect(result.stderr.contains("See 'amk pack --help'"), "\(result.stderr)")
            #expect(!tree.exists("out.tar.xz"))
        }

        @Test func helpExits0OnStdout() throws {
            for arguments in [["--help"], ["pack", "--help"], ["help", "extract"], ["pack", "-h"], ["list", "-l", "-h"]] {
                let result = try AMKProcess.run(arguments)
                #expect(result.status == 0, "\(arguments)")
                #expect(result.stdout.contains("USAGE:"), "\(arguments): \(result.stdout)")
            }
        }

        @Test func sizeFormsAreAccepted() throws {
            for (index, size) in ["2M", "2MiB", "2097152"].enumerated() {
                let out = tree.path("out\(index).tar.xz")
                let pack = try AMKProcess.run(["pack", tree.path("src"), "-o", out, "--chunk-size", size])
                #expect(pack.status == 0, "\(size): \(pack.stderr)")
                let info = try AMKProcess.run(["info", out])
                #expect(info.stdout.contains("chunk size    2.0 MiB"), "\(size): \(info.stdout)")
            }
        }

        @Test(arguments: ["list", "extract", "verify", "info"])
        func missingArchiveExits1NamingIt(command: String) throws {
            let missing = tree.path("no-such.tar.xz")
            let result = try AMKProcess.run([command, missing], in: tree.root)
            #expect(result.status == 1)
            let lines = result.stderr.split(separator: "\n")
            #expect(lines.count == 1, "one line expected: \(result.stderr)")
            #expect(result.stderr.hasPrefix("amk: ") && result.stderr.contains(missing), "\(result.stderr)")
        }

        @Test func missingSourceExits1NamingItAndWritesNothing() throws {
            let missing = tree.path("not-there")
            let result = try AMKProcess.run(["pack", missing, "-o", tree.path("out.tar.xz")])
            #expect(result.status == 1)
            #expect(result.stderr.hasPrefix("amk: ") && result.stderr.contains(missing), "\(result.stderr)")
            #expect(!tree.exists("out.tar.xz"))
        }
    }
}
