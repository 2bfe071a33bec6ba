import SampleData
import TestSupport
import Testing

/// The smallfiles corpus: many small text files in a project-like tree, the same from its seed.
@Suite(.background) struct SmallFilesCorpusTests {
    private static let seed: UInt64 = 0xa3c5_2025_0b0e_7e57

    private func generate(scale: Double, seed: UInt64 = seed) throws -> (tree: CorpusTree, writer: CorpusWriter) {
        try CorpusTree.generate { try SmallFilesCorpus(scale: scale, seed: seed).generate(into: &$0) }
    }

    /// The benchmark's corpus at its `--quick` scale, pinned (see AppDataCorpusTests).
    @Test func theBenchmarksCorpusIsPinned() throws {
        let (tree, writer) = try generate(scale: 0.02)
        #expect(writer.files == 2_000)
        #expect(writer.bytes == 3_845_313)
        #expect(tree.digest == 12_990_922_405_088_461_923)
    }

    @Test func sameSeedSameBytesOtherSeedOtherBytes() throws {
        let first = try generate(scale: 0.002, seed: 1)
        #expect(try generate(scale: 0.002, seed: 1).tree == first.tree)
        #expect(try generate(scale: 0.002, seed: 2).tree != first.tree)
    }

    /// The scale gives the number of files (100,000 at 1); sizes stay 100 B to 8 KiB, about 200
    /// files a folder, every kind of file present.
    @Test func scaleGivesTheCountAndFilesStaySmall() throws {
        let (tree, writer) = try generate(scale: 0.004)
        #expect(writer.files == 400)
        let files = tree.files
        #expect(files.count == 400)
        #expect(files.values.allSatisfy { (80...8_192).contains($0.count) })
        #expect(files.keys.allSatisfy { $0.hasPrefix("src/") })
        let kinds = Set(files.keys.compactMap { $0.split(separator: ".").last.map(String.init) })
        #expect(kinds == ["txt", "md", "json", "swift", "csv", "log"])
        var perFolder: [Substring: Int] = [:]
        for path in files.keys { perFolder[path[..<path.lastIndex(of: "/")!], default: 0] += 1 }
        #expect(perFolder.values.allSatisfy { $0 <= 200 })
        #expect(try generate(scale: 0.001).writer.files == 100)
    }
}
