import Foundation
import Testing

@testable import IndexedArchive
@testable import amk

extension AMKTests {
    /// A salvage that loses many members names the first twenty and counts the rest.
    @Suite @MainActor struct SalvageListing {
        /// Without the index, a damage that cut no member (it fell between two) leaves nothing
        /// known lost, and the members after it unknown: not "lost at least 0 members", which
        /// read as nothing lost.
        @Test func anUnknownLossIsNotCountedAsNone() {
            let report = SalvageReport(
                recovered: ["a", "b"], lost: [], lostIsComplete: false, goodBlocks: 1, damagedBlocks: 0, damageOffset: 4096,
                damage: "the file ends inside a block")
            let lines = SalvageCommand.lines(for: report, lostListIsComplete: false)
            #expect(!lines.contains { $0.contains("lost at least 0") }, "\(lines)")
            #expect(
                lines.last == "members after the damage are unknown: no readable index lists them, so what was lost cannot be told",
                "\(lines)")
            var cut = report
            cut.lost = ["c"]
            #expect(
                SalvageCommand.lines(for: cut, lostListIsComplete: false).suffix(2)
                    == ["lost at least 1 member (no readable index lists the members after the damage):", "  c"])
        }

        @Test func longLostListIsCut() throws {
            let tree = try TestTree()
            for index in 0..<80 {
                try tree.write(
                    "src/many/f\(String(format: "%02d", index)).bin", TestTree.noise(count: 64 * 1024, seed: UInt64(500 + index)))
            }
            let archive = tree.path("many.tar.xz")
            let pack = try AMKProcess.run(["pack", tree.path("src/many"), "-o", archive, "--chunk-size", "4M"])
            #expect(pack.status == 0, "\(pack.stderr)")
            // Damage the first block (4 MiB from offset 12, about 60 members): they are lost, and
            // salvage resumes after the block; the index at the end is intact.
            var bytes = try Data(contentsOf: URL(fileURLWithPath: archive))
            for offset in 400_000..<400_016 { bytes[offset] ^= 0x5A }
            try bytes.write(to: URL(fileURLWithPath: archive))

            let result = try AMKProcess.run(["salvage", archive, "-C", tree.path("rescued")])
            #expect(result.status == 1, "lost members exit 1: \(result.stderr)")
            let lines = result.stdout.split(separator: "\n").map(String.init)
            let header = try #require(lines.firstIndex { $0.hasPrefix("lost ") }, "\(result.stdout)")
            let match = try #require(lines[header].firstMatch(of: /^lost (\d+) members:$/), "\(result.stdout)")
            let lost = try #require(Int(match.output.1))
            #expect(lost > 20, "\(result.stdout)")
            let listed = lines[(header + 1)...]
            #expect(listed.count == 21, "\(result.stdout)")
            #expect(listed.prefix(20).allSatisfy { $0.hasPrefix("  many/") }, "\(result.stdout)")
            #expect(listed.last == "  ... and \(lost - 20) more", "\(result.stdout)")
        }
    }
}
