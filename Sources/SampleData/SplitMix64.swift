import Foundation

/// A small, fast, seedable generator (Steele, Lea and Flood's SplitMix64).
///
/// The corpora must be byte-for-byte the same on every machine and every Swift release, because
/// cached corpora and published figures are only comparable if they are, so nothing here uses the
/// standard library's `random(in:using:)` (whose algorithm may change): every number is derived
/// through the helpers below. It is public for the benchmarks that need a few seeded numbers of
/// their own (when to cancel, what text to pack) and should draw them the same way.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// A generator whose numbers depend on `seed` alone, so a run can be repeated from its seed.
    public init(seed: UInt64) {
        state = seed
    }

    /// A generator for one item of a corpus, independent of how many numbers earlier items drew,
    /// so that changing one category never reshuffles the others.
    init(seed: UInt64, stream: String, index: Int) {
        // FNV-1a over the stream name: stable, unlike `Hasher`, which is seeded per process.
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in stream.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        var mixer = SplitMix64(seed: seed ^ hash ^ (UInt64(truncatingIfNeeded: index) &* 0x9e37_79b9_7f4a_7c15))
        state = mixer.next()
    }

    /// The next number; every other draw is built on it, so that the sequence is fixed by the seed.
    public mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }

    /// A number in `0..<bound`, by modulo rather than the standard library's rejection sampling,
    /// whose draws could change between releases (the bias is far below anything a benchmark
    /// could notice).
    public mutating func below(_ bound: Int) -> Int {
        precondition(bound > 0)
        return Int(truncatingIfNeeded: next() % UInt64(bound))
    }

    /// A number in `range`.
    mutating func int(in range: ClosedRange<Int>) -> Int {
        range.lowerBound + below(range.upperBound - range.lowerBound + 1)
    }

    /// A double in `[0, 1)`.
    mutating func unit() -> Double {
        Double(next() >> 11) * 0x1p-53
    }

    /// True with probability `p`.
    mutating func chance(_ p: Double) -> Bool {
        unit() < p
    }

    /// A size between `low` and `high` whose logarithm is uniform: many small, few large, as
    /// file sizes are in real trees.
    mutating func logUniform(_ low: Int, _ high: Int) -> Int {
        let value = Double(low) * exp(log(Double(high) / Double(low)) * unit())
        return min(high, max(low, Int(value)))
    }

    /// `count` sizes in `range`, log-uniform, then scaled together so that they add up to about
    /// `total`: the spec gives each category a count and a total, and both must hold.
    mutating func sizes(count: Int, total: Int, range: ClosedRange<Int>) -> [Int] {
        let raw = (0..<count).map { _ in Double(logUniform(range.lowerBound, range.upperBound)) }
        let factor = Double(total) / max(1, raw.reduce(0, +))
        return raw.map { min(range.upperBound, max(range.lowerBound, Int($0 * factor))) }
    }

    /// Fills `buffer` with random bytes: data that no compressor can shrink.
    mutating func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        var offset = 0
        while offset + 8 <= buffer.count {
            buffer.storeBytes(of: next(), toByteOffset: offset, as: UInt64.self)
            offset += 8
        }
        var tail = next()
        while offset < buffer.count {
            buffer[offset] = UInt8(truncatingIfNeeded: tail)
            tail >>= 8
            offset += 1
        }
    }
}
