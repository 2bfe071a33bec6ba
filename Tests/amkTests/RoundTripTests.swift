import Foundation
import Testing

extension AMKTests {
    /// pack → list (plain, long, JSON) → extract (all, one member) → verify → info on a small tree.
    @Suite @MainActor struct RoundTrip {
        let tree: TestTree
        let archive: String

        init() throws {
            tree = try TestTree()
            try tree.write("src/tree/a.txt", "hello, archive\n")
            try tree.write("src/tree/sub/big.bin", TestTree.noise(count: 300 * 1024, seed: 7))
            try tree.write("src/tree/sub/script.sh", Array("#!/bin/sh\necho hi\n".utf8), mode: 0o755)
            try tree.mkdir("src/tree/empty")
            try tree.symlink("src/tree/link", to: "a.txt")
            archive = tree.path("out.tar.xz")
        }

        func pack() throws -> AMKProcess.Result {
            try AMKProcess.run(["pack", tree.path("src/tree"), "-o", archive, "--chunk-size", "1MiB"])
        }

        @Test func packPrintsSummaryAndNoProgressWhenNotATerminal() throws {
            let result = try pack()
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stderr.isEmpty, "stderr is not a terminal: no progress bar expected, got \(result.stderr.debugDescription)")
            let line = result.stdout.trimmingCharacters(in: .newlines)
            #expect(
                line.wholeMatch(
                    of:
                        /packed 7 entries, [0-9.]+ (B|KiB|MiB) -> [0-9.]+ (B|KiB|MiB) \([0-9.]+%\) in [0-9.]+ s, [0-9.]+ (B|KiB|MiB|GiB)\/s, \d+ blocks? \(\d+ stored\)/
                ) != nil,
                "\(line)")
            #expect(tree.exists("out.tar.xz"))
        }

        @Test func listPlainLongAndJSON() throws {
            #expect(try pack().status == 0)

            let plain = try AMKProcess.run(["list", archive])
            #expect(plain.status == 0, "\(plain.stderr)")
            let names = plain.stdout.split(separator: "\n").map(String.init)
            #expect(
                Set(names) == [
                    "tree/", "tree/a.txt", "tree/sub/", "tree/sub/big.bin", "tree/sub/script.sh",
                    "tree/empty/", "tree/link"
                ])

            let long = try AMKProcess.run(["list", "--long", archive])
            #expect(long.status == 0, "\(long.stderr)")
            let lines = long.stdout.split(separator: "\n").map(String.init)
            #expect(lines.count == 7)
            #expect(lines.contains { $0.wholeMatch(of: /-rw-r--r-- +15 \d{4}-\d\d-\d\d \d\d:\d\d tree\/a\.txt/) != nil }, "\(lines)")
            #expect(
                lines.contains { $0.wholeMatch(of: /-rwxr-xr-x +18 \d{4}-\d\d-\d\d \d\d:\d\d tree\/sub\/script\.sh/) != nil }, "\(lines)")
            #expect(lines.contains { $0.wholeMatch(of: /-rw-r--r-- +307200 .* tree\/sub\/big\.bin/) != nil }, "\(lines)")
            #expect(lines.contains { $0.hasPrefix("d") && $0.hasSuffix(" tree/empty/") }, "\(lines)")
            #expect(lines.contains { $0.hasPrefix("l") && $0.hasSuffix(" tree/link -> a.txt") }, "\(lines)")

            let json = try AMKProcess.run(["list", "--json", archive])
            #expect(json.status == 0, "\(json.stderr)")
            let parsed = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8))
            let objects = try #require(parsed as? [[String: Any]])
            #expect(objects.count == 7)
            let file = try #require(objects.first { $0["path"] as? String == "tree/a.txt" })
            #expect(file["type"] as? String == "file")
            #expect((file["size"] as? NSNumber)?.intValue == 15)
            #expect(file["mode"] as? String == "0644")
            #expect(file["uid"] is NSNumber && file["gid"] is NSNumber)
            #expect(file["linkTarget"] is NSNull)
            let actual = try FileManager.default.attributesOfItem(atPath: tree.path("src/tree/a.txt"))[.modificationDate] as? Date
            let mtime = try #require((file["mtime"] as? NSNumber)?.doubleValue)
            #expect(abs(mtime - (actual?.timeIntervalSince1970 ?? 0)) < 0.01)
            let link = try #require(objects.first { $0["path"] as? String == "tree/link" })
            #expect(link["type"] as? String == "symlink")
            #expect(link["linkTarget"] as? String == "a.txt")
            let directory = try #require(objects.first { $0["path"] as? String == "tree/empty/" })
            #expect(directory["type"] as? String == "directory")
            #expect(directory["mode"] as? String == "0755")
        }

        @Test func extractAllThenOneMember() throws {
            #expect(try pack().status == 0)

            let all = try AMKProcess.run(["extract", archive, "-C", tree.path("all")])
            #expect(all.status == 0, "\(all.stderr)")
            #expect(all.stdout.wholeMatch(of: /extracted 7 entries, [0-9.]+ KiB in [0-9.]+ s\n/) != nil, "\(all.stdout)")
            #expect(try tree.read("all/tree/a.txt") == tree.read("src/tree/a.txt"))
            #expect(try tree.read("all/tree/sub/big.bin") == tree.read("src/tree/sub/big.bin"))
            #expect(tree.exists("all/tree/empty"))
            #expect(try FileManager.default.destinationOfSymbolicLink(atPath: tree.path("all/tree/link")) == "a.txt")
            let mode = try FileManager.default.attributesOfItem(atPath: tree.path("all/tree/sub/script.sh"))[.posixPermissions] as? Int
            #expect(mode == 0o755)

            // The default destination is the current directory.
            try tree.mkdir("one")
            let one = try AMKProcess.run(["extract", archive, "tree/sub/script.sh"], in: tree.url("one"))
            #expect(one.status == 0, "\(one.stderr)")
            #expect(one.stdout.hasPrefix("extracted "))
            #expect(try tree.read("one/tree/sub/script.sh") == tree.read("src/tree/sub/script.sh"))
            #expect(!tree.exists("one/tree/a.txt"))
            #expect(!tree.exists("one/tree/sub/big.bin"))

            let missing = try AMKProcess.run(["extract", archive, "tree/nope", "-C", tree.path("none")])
            #expect(missing.status == 1)
            #expect(missing.stderr.hasPrefix("amk: ") && missing.stderr.contains("tree/nope"), "\(missing.stderr)")
        }

        @Test func verifyAndInfo() throws {
            let pack = try pack()
            #expect(pack.status == 0)
            let packRatio = try #require(pack.stdout.firstMatch(of: /\(([0-9.]+)%\)/)).output.1

            let verify = try AMKProcess.run(["verify", archive])
            #expect(verify.status == 0, "\(verify.stderr)")
            #expect(verify.stdout == "OK: 7 members verified\n")

            let info = try AMKProcess.run(["info", archive])
            #expect(info.status == 0, "\(info.stderr)")
            let rows = info.stdout.split(separator: "\n").map(String.init)
            #expect(rows.contains { $0.wholeMatch(of: /streams +1/) != nil }, "\(rows)")
            #expect(rows.contains { $0.wholeMatch(of: /blocks +\d+ \(\d+ data, 2 index\)/) != nil }, "\(rows)")
            #expect(rows.contains("ratio         \(packRatio)%"), "info and pack agree on the ratio: \(rows)")
            #expect(rows.contains { $0.wholeMatch(of: /chunk size +1\.0 MiB/) != nil }, "\(rows)")
            #expect(rows.contains { $0.wholeMatch(of: /index +amk index, 7 members \(random access\); pixz index/) != nil }, "\(rows)")
            #expect(rows.contains { $0.wholeMatch(of: /metadata +writer: AppMigration .*/) != nil }, "\(rows)")
            // Aligned: every value starts in the same column.
            let columns = Set(
                rows.compactMap { row in row.firstRange(of: /\s{2,}\S/).map { row.distance(from: row.startIndex, to: $0.upperBound) } })
            #expect(columns.count == 1, "\(rows)")
        }
    }
}
