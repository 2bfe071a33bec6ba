import Foundation
import Testing

extension AMKTests {
    /// A salvage that loses many members names the first twenty and counts the rest.
    @Suite @MainActor struct SalvageListing {
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
