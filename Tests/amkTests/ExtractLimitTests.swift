import Foundation
import Testing

extension AMKTests {
    /// `amk extract --max-bytes` (and `salvage`'s): the bound on the content an extraction writes,
    /// which the error of a refused archive tells the user to raise.
    @Suite @MainActor struct ExtractLimit {
        let tree: TestTree
        let archive: String
        /// 96 KiB that do not compress to nothing.
        let big: [UInt8]

        init() throws {
            tree = try TestTree()
            var generator = SystemRandomNumberGenerator()
            big = (0..<(96 << 10)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            _ = try tree.write("src/t/big.bin", big)
            try tree.write("src/t/a.txt", "a\n")
            archive = tree.path("t.tar.xz")
            let pack = try AMKProcess.run(["pack", tree.path("src/t"), "-o", archive])
            try #require(pack.status == 0, "\(pack.stderr)")
        }

        @Test func underTheLimitTheTreeIsExtracted() throws {
            let result = try AMKProcess.run(["extract", "--max-bytes", "1M", archive, "-C", tree.path("out")])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(try tree.read("out/t/big.bin") == big)
            #expect(try tree.read("out/t/a.txt") == Array("a\n".utf8))
        }

        /// Over it, from a file or a pipe: one line naming the member and the option, status 1,
        /// and no part of the member left behind. Through a pipe the members before it whose
        /// block's check had not been read yet are removed too, each named first.
        @Test(arguments: [false, true])
        func overTheLimitTheMemberIsRefused(throughAPipe: Bool) throws {
            let result =
                throughAPipe
                ? try ShellPipeline.run("cat t.tar.xz | \"$AMK\" extract --max-bytes 64K - -C out", in: tree.url("."))
                : try AMKProcess.run(["extract", "--max-bytes", "64K", archive, "-C", tree.path("out")])
            #expect(result.status == 1)
            let lines = result.stderr.split(separator: "\n")
            #expect(result.stderr.hasPrefix("amk: ") && (throughAPipe || lines.count == 1), "\(result.stderr)")
            #expect(lines.dropLast().allSatisfy { $0.contains("': removed: ") }, "\(result.stderr)")
            #expect(lines.last?.contains("t/big.bin") == true && result.stderr.contains("--max-bytes"), "\(result.stderr)")
            #expect(result.stderr.contains("65536 bytes of content, the limit set"), "the limit is named: \(result.stderr)")
            #expect(!tree.exists("out/t/big.bin"), "no part of the refused member is left")
        }

        /// `salvage` takes the same limit: under it the archive is recovered whole, over it the
        /// member is reported lost with the reason.
        @Test func salvageTakesTheLimitToo() throws {
            let whole = try AMKProcess.run(["salvage", "--max-bytes", "1M", archive, "-C", tree.path("whole")])
            #expect(whole.status == 0, "\(whole.stdout)\(whole.stderr)")
            #expect(try tree.read("whole/t/big.bin") == big)
            let cut = try AMKProcess.run(["salvage", "--max-bytes", "64K", archive, "-C", tree.path("cut")])
            #expect(cut.status == 1)
            #expect(cut.stdout.contains("stopped: member 't/big.bin': "), "\(cut.stdout)")
            #expect(cut.stdout.contains("more than 65536 bytes of content, the limit set"), "\(cut.stdout)")
            #expect(!cut.stdout.contains("damage"), "a limit is no damage: \(cut.stdout)")
            #expect(cut.stdout.contains("t/big.bin"), "the member is reported lost: \(cut.stdout)")
            #expect(!tree.exists("cut/t/big.bin"))
            let json = try AMKProcess.run(["salvage", "--json", "--max-bytes", "64K", archive, "-C", tree.path("json")])
            #expect(json.status == 1)
            let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
            #expect((object["stopped"] as? String)?.contains("the limit set") == true, "\(json.stdout)")
            #expect(object["damage"] is NSNull && object["damageOffset"] is NSNull && object["whole"] as? Bool == false)
            // Grouped by type, `t/a.txt` comes after `t/big.bin`, so the stop loses it too.
            #expect(object["lost"] as? [String] == ["t/big.bin", "t/a.txt"], "\(json.stdout)")
        }

        @Test(arguments: ["0", "12X", "-5", "T"])
        func aLimitThatIsNoSizeIsAUsageError(argument: String) throws {
            let result = try AMKProcess.run(["extract", "--max-bytes=\(argument)", archive, "-C", tree.path("out")])
            #expect(result.status == 2, "\(result.stderr)")
            #expect(!tree.exists("out"))
        }
    }
}
