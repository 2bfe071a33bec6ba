import SampleData
import TestSupport
import Testing
import XZ

/// The appdata corpus: repeatable from its seed, sized by its scale, and made of text that
/// compresses and media that does not, because those are what the benchmark's figures and the
/// demo's report rest on.
@Suite(.background) struct AppDataCorpusTests {
    private static let seed: UInt64 = 0xa3c5_2025_0b0e_7e57

    private func generate(scale: Double, seed: UInt64 = seed) throws -> (tree: CorpusTree, writer: CorpusWriter) {
        try CorpusTree.generate { try AppDataCorpus(scale: scale, seed: seed).generate(into: &$0) }
    }

    /// The benchmark's corpus at its `--quick` scale, with its seed, pinned: the cached corpora
    /// and the published figures are only comparable while this holds. (The values are those of
    /// the tree the benchmark generated before the generator moved here.) A change meant to alter
    /// the output must bump `CorpusCache.generatorVersion` in Benchmarks and update these values.
    @Test func theBenchmarksCorpusIsPinned() throws {
        let (tree, writer) = try generate(scale: 0.02)
        #expect(writer.files == 115)
        #expect(writer.bytes == 7_664_270)
        #expect(tree.digest == 8_133_739_868_160_223_679)
    }

    @Test func sameSeedSameBytesOtherSeedOtherBytes() throws {
        let first = try generate(scale: 0.005, seed: 1)
        #expect(try generate(scale: 0.005, seed: 1).tree == first.tree)
        let other = try generate(scale: 0.005, seed: 2)
        #expect(other.tree != first.tree)
        // Another seed is other data of the same shape, not another shape.
        #expect(other.writer.files == first.writer.files)
        #expect(Set(other.tree.files.values).isDisjoint(with: first.tree.files.values))
    }

    /// Writing the parts one by one, as the demo does to report them, writes what
    /// `generate(into:)` writes.
    @Test func partsOneByOneAreTheWholeCorpus() throws {
        let corpus = AppDataCorpus(scale: 0.005, seed: 3)
        let whole = try CorpusTree.generate { try corpus.generate(into: &$0) }
        let parts = try CorpusTree.generate { writer in
            for part in AppDataCorpus.Part.allCases.reversed() { try corpus.generate(part, into: &writer) }
        }
        #expect(parts.tree == whole.tree)
        #expect(parts.writer.bytes == whole.writer.bytes)
    }

    /// The scale multiplies every count and every part's total, so files keep their sizes.
    @Test func scaleMultipliesCountsAndTotals() throws {
        func measure(_ scale: Double) throws -> [AppDataCorpus.Part: (files: Int, bytes: Int)] {
            let corpus = AppDataCorpus(scale: scale, seed: 4)
            var result: [AppDataCorpus.Part: (files: Int, bytes: Int)] = [:]
            _ = try CorpusTree.generate { writer in
                for part in AppDataCorpus.Part.allCases {
                    let (files, bytes) = (writer.files, writer.bytes)
                    try corpus.generate(part, into: &writer)
                    result[part] = (writer.files - files, writer.bytes - bytes)
                }
            }
            return result
        }
        let small = try measure(0.01)
        let large = try measure(0.04)
        // round(5,000 × scale) responses, round(200 × scale) media, round(400 × scale) plists, always three databases.
        #expect(small.mapValues(\.files) == [.databases: 3, .responses: 50, .media: 2, .plists: 4])
        #expect(large.mapValues(\.files) == [.databases: 3, .responses: 200, .media: 8, .plists: 16])
        for part in AppDataCorpus.Part.allCases {
            let ratio = Double(large[part]!.bytes) / Double(small[part]!.bytes)
            #expect((3.6...4.4).contains(ratio), "\(part): \(ratio)")
        }
        let total = large.values.map(\.bytes).reduce(0, +)
        let nominal = 0.04 * Double(AppDataCorpus.bytesAtScaleOne)
        #expect(abs(Double(total) - nominal) < nominal * 0.02, "\(total) bytes against \(nominal)")
    }

    /// Media are stored, not compressed, by xz; the text parts shrink several times. This is
    /// the mix that makes the demo's and the benchmark's ratios what they are.
    @Test func mediaIsIncompressibleAndTextCompresses() throws {
        let (tree, _) = try generate(scale: 0.01)
        func compressed(_ bytes: [UInt8]) throws -> (ratio: Double, stored: Bool) {
            let block = try bytes.withUnsafeBytes { try BlockEncoder(preset: 6, maxChunkSize: bytes.count).encode($0) }
            return (Double(block.bytes.count) / Double(bytes.count), block.isStored)
        }
        let media = try compressed(tree.concatenated(under: "Documents/Media/"))
        #expect(media.stored && media.ratio > 0.99, "media: \(media)")
        for (name, prefix, most) in [
            ("databases", "Library/Application Support/Messages/", 0.35),
            ("responses", "Library/Caches/com.example.app/Responses/", 0.35),
            ("plists", "Library/Preferences/", 0.5)
        ] {
            let text = try compressed(tree.concatenated(under: prefix))
            #expect(!text.stored && text.ratio < most, "\(name): \(text)")
        }
    }
}
