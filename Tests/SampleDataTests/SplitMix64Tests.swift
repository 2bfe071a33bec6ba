import Testing

@testable import SampleData

/// The generator every corpus byte comes from: if its numbers changed, every cached corpus and
/// every published figure would silently describe different data.
struct SplitMix64Tests {
    /// The reference outputs of SplitMix64 seeded with 0 (Vigna's `splitmix64.c`): the algorithm
    /// is the published one, not a look-alike.
    @Test func matchesTheReferenceSequence() {
        var rng = SplitMix64(seed: 0)
        #expect([rng.next(), rng.next(), rng.next()] == [0xE220_A839_7B1D_CDAF, 0x6E78_9E6A_A1B9_65F4, 0x06C4_5D18_8009_454F])
    }

    @Test func sameSeedSameNumbersOtherSeedOtherNumbers() {
        func draws(_ seed: UInt64) -> [UInt64] {
            var rng = SplitMix64(seed: seed)
            return (0..<64).map { _ in rng.next() }
        }
        #expect(draws(42) == draws(42))
        #expect(draws(42) != draws(43))
    }

    /// A corpus item's generator depends on its stream and index only, so that one category's
    /// change never reshuffles another's.
    @Test func streamsAreIndependentAndRepeatable() {
        func first(_ stream: String, _ index: Int, seed: UInt64 = 7) -> UInt64 {
            var rng = SplitMix64(seed: seed, stream: stream, index: index)
            return rng.next()
        }
        #expect(first("json", 3) == first("json", 3))
        #expect(first("json", 3) != first("json", 4))
        #expect(first("json", 3) != first("plist", 3))
        #expect(first("json", 3) != first("json", 3, seed: 8))
    }

    @Test func drawsStayInTheirRanges() {
        var rng = SplitMix64(seed: 1)
        for _ in 0..<10_000 {
            #expect((0..<7).contains(rng.below(7)))
            #expect((3...9).contains(rng.int(in: 3...9)))
            let unit = rng.unit()
            #expect(unit >= 0 && unit < 1)
            #expect((100...8_192).contains(rng.logUniform(100, 8_192)))
        }
    }

    /// Log-uniform sizes are mostly small: the median of 100..10,000 is near 1,000, not 5,000.
    @Test func logUniformFavoursSmallSizes() {
        var rng = SplitMix64(seed: 2)
        let sizes = (0..<10_001).map { _ in rng.logUniform(100, 10_000) }.sorted()
        #expect((700...1_400).contains(sizes[5_000]))
    }

    /// Sizes keep both the count and, within the range's clamping, the total that the corpus
    /// specification gives a category.
    @Test func sizesKeepCountAndTotal() {
        var rng = SplitMix64(seed: 3)
        let sizes = rng.sizes(count: 500, total: 5_000_000, range: 1_024...51_200)
        #expect(sizes.count == 500)
        #expect(sizes.allSatisfy { (1_024...51_200).contains($0) })
        let total = sizes.reduce(0, +)
        #expect(abs(total - 5_000_000) < 5_000_000 / 50, "total \(total)")
    }

    /// Random bytes for media: every byte value about equally often, so no compressor gains on them.
    @Test func fillIsUniformAndRepeatable() {
        func filled(_ seed: UInt64) -> [UInt8] {
            var rng = SplitMix64(seed: seed)
            var bytes = [UInt8](repeating: 0, count: 256 * 1_024 + 5)
            bytes.withUnsafeMutableBytes { rng.fill($0) }
            return bytes
        }
        let bytes = filled(4)
        #expect(bytes == filled(4))
        #expect(bytes != filled(5))
        var counts = [Int](repeating: 0, count: 256)
        for byte in bytes { counts[Int(byte)] += 1 }
        // 1,024 expected per value; a uniform source stays well within ±20%.
        #expect(counts.allSatisfy { (820...1_230).contains($0) }, "\(counts.min()!)...\(counts.max()!)")
    }
}
