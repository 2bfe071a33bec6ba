import Foundation
import TestSupport
import Testing

extension AMKTests {
    /// `-` as standard input and output, pipes and FIFOs, as tar users script them.
    @Suite @MainActor struct StandardStreams {
        let tree: TestTree

        init() throws {
            tree = try TestTree()
            try tree.write("d/a.txt", "alpha\n")
            try tree.write("d/sub/b.bin", TestTree.noise(count: 200 * 1024, seed: 3))
            try tree.symlink("d/link", to: "a.txt")
        }

        static let names: Set<String> = ["d/", "d/a.txt", "d/sub/", "d/sub/b.bin", "d/link"]

        func sh(_ command: String) throws -> AMKProcess.Result {
            try ShellPipeline.run(command, in: tree.root)
        }

        @Test func packToStandardOutputPipedIntoList() throws {
            let result = try sh(#""$AMK" pack d -o - | "$AMK" list -"#)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(Set(result.stdout.split(separator: "\n").map(String.init)) == Self.names)
            // The summary went to standard error, never into the archive.
            #expect(result.stderr.contains("packed 5 entries"), "\(result.stderr)")
            #expect(!tree.exists("-"), "no file named '-' is written")
        }

        @Test(.enabled(if: ChildProcess.lookUp("xz") != nil, "needs xz"))
        func packToStandardOutputIsAnXZStream() throws {
            let result = try sh(#""$AMK" pack d -o - -v > out.tar.xz && xz -t out.tar.xz"#)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.isEmpty, "nothing but the archive may go to standard output")
            // -v lists members on standard error when the archive is on standard output.
            #expect(result.stderr.contains("d/sub/b.bin"), "\(result.stderr)")
            let listed = try AMKProcess.run(["list", tree.path("out.tar.xz")])
            #expect(Set(listed.stdout.split(separator: "\n").map(String.init)) == Self.names)
        }

        @Test(.enabled(if: ChildProcess.lookUp("tar") != nil && ChildProcess.lookUp("xz") != nil, "needs tar and xz"))
        func extractATarFromStandardInput() throws {
            let result = try sh(#"tar -cJf - d | "$AMK" extract - -C x"#)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.hasPrefix("extracted 5 entries"), "\(result.stdout)")
            #expect(try String(contentsOfFile: tree.path("x/d/a.txt"), encoding: .utf8) == "alpha\n")
            #expect(try Data(contentsOf: tree.url("x/d/sub/b.bin")) == Data(TestTree.noise(count: 200 * 1024, seed: 3)))
            #expect(try FileManager.default.destinationOfSymbolicLink(atPath: tree.path("x/d/link")) == "a.txt")
        }

        @Test func ourArchiveThroughAPipeIsCheckedAgainstItsIndex() throws {
            let extract = try sh(#""$AMK" pack d -o - | "$AMK" extract - d/sub -C y --json"#)
            #expect(extract.status == 0, "\(extract.stderr)")
            let report = try #require(try JSONSerialization.jsonObject(with: Data(extract.stdout.utf8)) as? [String: Any])
            #expect((report["entries"] as? NSNumber)?.intValue == 2)
            #expect(report["archive"] as? String == "-")
            #expect(tree.exists("y/d/sub/b.bin") && !tree.exists("y/d/a.txt"))

            let verify = try sh(#""$AMK" pack d -o - | "$AMK" verify --json -"#)
            #expect(verify.status == 0, "\(verify.stderr)")
            let verified = try #require(try JSONSerialization.jsonObject(with: Data(verify.stdout.utf8)) as? [String: Any])
            #expect(verified["ok"] as? Bool == true)
            #expect((verified["members"] as? NSNumber)?.intValue == 5)
            #expect(verified["mode"] as? String == "stream-indexed")
        }

        @Test func redirectedFileDevStdinAndAFIFO() throws {
            #expect(try AMKProcess.run(["pack", "d", "-o", "a.tar.xz"], in: tree.root).status == 0)
            // A redirected regular file is read with random access (from the index).
            let redirected = try sh(#""$AMK" list - < a.tar.xz"#)
            #expect(redirected.status == 0, "\(redirected.stderr)")
            #expect(Set(redirected.stdout.split(separator: "\n").map(String.init)) == Self.names)
            let devStdin = try sh(#"cat a.tar.xz | "$AMK" list /dev/stdin"#)
            #expect(devStdin.status == 0, "\(devStdin.stderr)")
            #expect(Set(devStdin.stdout.split(separator: "\n").map(String.init)) == Self.names)
            let fifo = try sh(#"mkfifo f; cat a.tar.xz > f & "$AMK" verify f"#)
            #expect(fifo.status == 0, "\(fifo.stderr)")
            #expect(fifo.stdout == "OK: 5 members verified\n")
            let info = try sh(#"cat a.tar.xz | "$AMK" info --json -"#)
            #expect(info.status == 0, "\(info.stderr)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(info.stdout.utf8)) as? [String: Any])
            #expect(object["indexed"] as? Bool == true)
            #expect((object["indexedEntries"] as? NSNumber)?.intValue == 5)
        }

        /// As GNU tar: `-` on a terminal is refused (usage error), and so is `-o -`.
        @Test(.enabled(if: ChildProcess.lookUp("python3") != nil, "needs python3 for a pseudo-terminal"))
        func aTerminalIsRefused() throws {
            let script = """
                import os, pty, sys
                pid, fd = pty.fork()
                if pid == 0:
                    os.execv(sys.argv[1], sys.argv[1:])
                out = b''
                try:
                    while True:
                        chunk = os.read(fd, 1024)
                        if not chunk: break
                        out += chunk
                except OSError:
                    pass
                _, status = os.waitpid(pid, 0)
                sys.stdout.write(out.decode(errors='replace'))
                sys.exit(os.waitstatus_to_exitcode(status))
                """
            try script.write(to: tree.url("run_in_pty.py"), atomically: true, encoding: .utf8)
            let list = try sh(#"python3 run_in_pty.py "$AMK" list -"#)
            #expect(list.status == 2)
            #expect(list.stdout.contains("refusing to read an archive from a terminal"), "\(list.stdout)")
            let pack = try sh(#"python3 run_in_pty.py "$AMK" pack d -o -"#)
            #expect(pack.status == 2)
            #expect(pack.stdout.contains("Refusing to write an archive to a terminal"), "\(pack.stdout)")
        }

        @Test func aDamagedStreamFails() throws {
            #expect(try AMKProcess.run(["pack", "d", "-o", "a.tar.xz"], in: tree.root).status == 0)
            let cut = try sh(#"head -c 3000 a.tar.xz | "$AMK" verify -"#)
            #expect(cut.status != 0)
            #expect(cut.stderr.hasPrefix("amk: "), "\(cut.stderr)")
        }

        /// `info -` reads a copy of the pipe in a hidden temporary file; its errors named that
        /// copy's descriptor (`/dev/fd/9`), a file the user never gave. They name `-`.
        @Test func infoOfADamagedStreamNamesStandardInput() throws {
            #expect(try AMKProcess.run(["pack", "d", "-o", "a.tar.xz"], in: tree.root).status == 0)
            let cut = try sh(#"head -c 300 a.tar.xz | "$AMK" info -"#)
            #expect(cut.status == 1)
            #expect(cut.stderr.hasPrefix("amk: -"), "\(cut.stderr)")
            #expect(!cut.stderr.contains("/dev/fd/"), "\(cut.stderr)")
        }

        /// `info -` of an endless input that is not xz: it copied the whole pipe into the
        /// temporary folder before looking at it, and filled that disk (`cat /dev/zero`); its
        /// first bytes are refused at once.
        @Test func infoOfAStreamThatIsNotXZStopsAtItsFirstBytes() throws {
            for producer in ["cat /dev/zero", "yes", "printf 'x'", "printf ''"] {
                // The producer is cut off by the refusal (its "Broken pipe" is not amk's to test).
                let result = try sh(#"\#(producer) 2>/dev/null | timeout 20 "$AMK" info -"#)
                #expect(result.status == 1, "\(producer): status \(result.status), \(result.stderr)")
                #expect(
                    result.stderr == "amk: -, offset 0: not an xz file: the magic bytes FD 37 7A 58 5A 00 are missing\n",
                    "\(producer): \(result.stderr)")
            }
        }
    }
}
