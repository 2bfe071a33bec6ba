import Foundation
import TestSupport
import Testing

extension AMKTests {
    /// Names, link targets, metadata and a peer's messages are chosen by whoever made the archive
    /// or runs the other end: every human-readable output escapes their control characters (an
    /// ESC that would clear the screen, a newline that would forge a line) and bidi overrides.
    @Suite @MainActor struct TerminalOutput {
        static let colour = "red\u{1B}[31mRED\nforged line"
        static let title = "x\u{1B}]0;owned\u{7}"
        static let bidi = "invoice\u{202E}fdp.exe"
        static let backslash = #"back\nslash"#
        static let c1 = "del\u{7F}csi\u{9B}2J"

        let tree: TestTree
        let archive: String

        init() throws {
            tree = try TestTree()
            try tree.write("src/t/" + Self.colour, "colour\n")
            try tree.write("src/t/" + Self.bidi, "bidi\n")
            try tree.write("src/t/" + Self.backslash, "backslash\n")
            try tree.write("src/t/" + Self.c1, "c1\n")
            try tree.symlink("src/t/link", to: Self.title)
            archive = tree.path("t.tar.xz")
        }

        func pack() throws {
            let result = try AMKProcess.run(["pack", tree.path("src/t"), "-o", archive])
            try #require(result.status == 0, "\(result.stderr)")
        }

        /// No byte of `text` is a control character other than the newlines ending its lines, nor
        /// a bidi control.
        static func expectSafe(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
            let bad = text.unicodeScalars.filter {
                ($0.properties.generalCategory == .control && $0 != "\n") || $0.properties.isBidiControl
            }
            #expect(
                bad.isEmpty, "unescaped: \(bad.map { String($0.value, radix: 16) }) in \(text.debugDescription)",
                sourceLocation: sourceLocation)
        }

        @Test func listEscapesNamesAndLinkTargets() throws {
            try pack()
            let plain = try AMKProcess.run(["list", archive])
            #expect(plain.status == 0, "\(plain.stderr)")
            Self.expectSafe(plain.stdout)
            // One line per member: the newline in a name does not forge a line.
            #expect(
                Set(plain.stdout.split(separator: "\n").map(String.init)) == [
                    "t/", "t/link", #"t/red\x1b[31mRED\nforged line"#, #"t/invoice\u202efdp.exe"#, #"t/back\\nslash"#,
                    #"t/del\x7fcsi\u009b2J"#
                ])

            let long = try AMKProcess.run(["list", "--long", archive])
            #expect(long.status == 0, "\(long.stderr)")
            Self.expectSafe(long.stdout)
            let lines = long.stdout.split(separator: "\n").map(String.init)
            #expect(lines.count == 6, "\(lines)")
            #expect(lines.contains { $0.hasPrefix("l") && $0.hasSuffix(#" t/link -> x\x1b]0;owned\x07"#) }, "\(lines)")
            #expect(lines.contains { $0.hasSuffix(#" t/red\x1b[31mRED\nforged line"#) }, "\(lines)")

            // JSON stays JSON: the encoder escapes, and the names are the real ones.
            let json = try AMKProcess.run(["list", "--json", archive])
            #expect(json.status == 0, "\(json.stderr)")
            Self.expectSafe(json.stdout)
            let objects = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
            let paths = Set(objects.compactMap { $0["path"] as? String })
            #expect(paths == ["t/", "t/link", "t/" + Self.colour, "t/" + Self.bidi, "t/" + Self.backslash, "t/" + Self.c1])
            #expect(objects.first { $0["path"] as? String == "t/link" }?["linkTarget"] as? String == Self.title)
        }

        /// `extract` takes members as `list` prints them, and its errors name them escaped.
        @Test func extractTakesNamesAsListPrintsThem() throws {
            try pack()
            let listed = try AMKProcess.run(["list", archive]).stdout
                .split(separator: "\n").map(String.init).filter { $0.hasPrefix("t/red") || $0.hasPrefix("t/back") }
            #expect(listed.count == 2)
            let result = try AMKProcess.run(["extract", archive] + listed + ["-C", tree.path("out")])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(try tree.read("out/t/" + Self.colour) == Array("colour\n".utf8))
            #expect(try tree.read("out/t/" + Self.backslash) == Array("backslash\n".utf8))
            #expect(!tree.exists("out/t/" + Self.bidi))

            let missing = try AMKProcess.run(["extract", archive, "t/no\u{1B}[2Jsuch", "-C", tree.path("out2")])
            #expect(missing.status == 1)
            Self.expectSafe(missing.stderr)
            #expect(missing.stderr.contains(#"member 't/no\x1b[2Jsuch'"#), "\(missing.stderr)")
        }

        @Test func infoEscapesMetadata() throws {
            try tree.write("phone/Documents/note.txt", "note\n")
            let platform = "tablet\u{1B}[2J\nforged: yes"
            let export = try AMKProcess.run(
                [
                    "export", "--container", tree.path("phone"), "--destination", platform,
                    "-o", archive, "--preset", "0"
                ])
            try #require(export.status == 0, "\(export.stderr)")
            let info = try AMKProcess.run(["info", archive])
            #expect(info.status == 0, "\(info.stderr)")
            Self.expectSafe(info.stdout)
            #expect(info.stdout.contains(#"destinationPlatform: tablet\x1b[2J\nforged: yes"#), "\(info.stdout)")
            #expect(!info.stdout.split(separator: "\n").contains { $0.hasPrefix("forged") })
        }

        @Test func packWarningsEscapePaths() throws {
            let fifo = tree.path("src/t/pipe\u{1B}[2J")
            try #require(mkfifo(fifo, 0o644) == 0)
            let result = try AMKProcess.run(["pack", tree.path("src/t"), "-o", archive])
            #expect(result.status == 0, "\(result.stderr)")
            Self.expectSafe(result.stderr)
            #expect(result.stderr.contains(#"pipe\x1b[2J: skipped"#), "\(result.stderr)")
        }

        /// Members `extract` skips (a FIFO, from a tar made by GNU tar) are named escaped.
        @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/tar"), "GNU tar is not installed"))
        func extractWarningsEscapeNames() throws {
            try tree.mkdir("fifo")
            try #require(mkfifo(tree.path("fifo/pipe\u{1B}[2J\nforged"), 0o644) == 0)
            let tar = try ChildProcess.run("/usr/bin/tar", ["-C", tree.path("fifo"), "-cJf", archive, "."])
            try #require(tar.status == 0)
            let result = try AMKProcess.run(["extract", archive, "-C", tree.path("out")])
            #expect(result.status == 0, "\(result.stderr)")
            Self.expectSafe(result.stderr)
            #expect(result.stderr.contains(#"pipe\x1b[2J\nforged: skipped"#), "\(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        }

        @Test func salvageEscapesLostNames() throws {
            for index in 0..<6 {
                try tree.write("src/t/\(index)\u{1B}[2J\u{202E}.bin", TestTree.noise(count: 400 * 1024, seed: UInt64(900 + index)))
            }
            let pack = try AMKProcess.run(["pack", tree.path("src/t"), "-o", archive, "--chunk-size", "1M"])
            try #require(pack.status == 0, "\(pack.stderr)")
            var bytes = try Data(contentsOf: URL(fileURLWithPath: archive))
            for offset in 100_000..<100_016 { bytes[offset] ^= 0x5A }
            try bytes.write(to: URL(fileURLWithPath: archive))
            let result = try AMKProcess.run(["salvage", archive, "-C", tree.path("rescued")])
            #expect(result.status == 1, "damage found exits 1: \(result.stderr)")
            Self.expectSafe(result.stdout)
            #expect(result.stdout.contains(#"\x1b[2J\u202e.bin"#), "\(result.stdout)")
        }

        /// A container path (and so the receiver's report, which the sender prints) and a bundle
        /// identifier (which the receiver prints) with escape sequences.
        @Test(.enabled(if: TransferProcess.has("send") && TransferProcess.has("receive"), "no transfer commands"))
        func sendAndReceiveEscapePeerText() throws {
            try tree.write("phone/Documents/note.txt", "note\n")
            let destination = tree.path("tab\u{1B}[2Jlet")
            let receiver = try TransferProcess.startReceiver(container: destination)
            let sent = try AMKProcess.run(
                [
                    "send", "--container", tree.path("phone"), "--to", receiver.endpoint, "--code", receiver.code,
                    "--bundle-identifier", "com.evil\u{1B}]0;owned\u{7}", "--preset", "0"
                ])
            let received = try AMKProcess.collect(receiver.process)
            #expect(sent.status == 0, "\(sent.stderr)")
            #expect(received.status == 0, "\(received.stderr)")
            for text in [sent.stdout, sent.stderr, received.stdout, received.stderr] { Self.expectSafe(text) }
            #expect(sent.stdout.contains(#"tab\x1b[2Jlet"#), "\(sent.stdout)")
            #expect(received.stdout.contains(#"tab\x1b[2Jlet"#), "\(received.stdout)")
            #expect(received.stdout.contains(#"com.evil\x1b]0;owned\x07"#), "\(received.stdout)")
        }

        /// `amk info *` in a folder of hostile names: the usage error quotes one of them.
        @Test func usageErrorsEscapeArguments() throws {
            let result = try AMKProcess.run(["info", "a.tar.xz", "b\u{1B}[2J.tar.xz"])
            #expect(result.status == 2)
            Self.expectSafe(result.stderr)
            #expect(result.stderr.contains(#"b\x1b[2J.tar.xz"#), "\(result.stderr)")
            #expect(result.stderr.contains("\nUsage: amk info"), "the usage lines stay lines: \(result.stderr)")
        }

        /// `amk list A *` (members after the archive) in a folder of hostile names: the names that
        /// match nothing are quoted escaped, after the one that matched is listed escaped.
        @Test func unmatchedMembersAreEscaped() throws {
            try pack()
            let result = try AMKProcess.run(["list", archive, "t/" + Self.colour, "b\u{1B}[2J.tar.xz"])
            #expect(result.status == 1)
            Self.expectSafe(result.stdout)
            Self.expectSafe(result.stderr)
            #expect(result.stdout.split(separator: "\n").count == 1, "\(result.stdout)")
            #expect(result.stderr.contains(#"'b\x1b[2J.tar.xz'"#), "\(result.stderr)")
        }

        @Test func importEscapesPaths() throws {
            try tree.write("phone/Documents/note.txt", "note\n")
            let export = try AMKProcess.run(
                ["export", "--container", tree.path("phone"), "-o", archive, "--preset", "0"])
            try #require(export.status == 0, "\(export.stderr)")
            let result = try AMKProcess.run(["import", archive, "--container", tree.path("tab\u{1B}[2Jlet")])
            #expect(result.status == 0, "\(result.stderr)")
            Self.expectSafe(result.stdout)
            #expect(result.stdout.contains(#"tab\x1b[2Jlet"#), "\(result.stdout)")
        }
    }
}
