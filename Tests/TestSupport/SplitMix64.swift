/// SplitMix64, the seeded generator every test target uses: small, fast, the same on every
/// platform, and random enough that LZMA cannot compress its output. A seed means the same run
/// anywhere, so a failing "random" test is replayed from the seed its message gives.
package struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    package init(seed: UInt64) { state = seed }

    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The name most suites give the seeded generator: what they draw from, not which algorithm.
package typealias SeededGenerator = SplitMix64
