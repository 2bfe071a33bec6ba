import SampleData

/// Pseudo-random choices derived from the input itself (the project's SplitMix64, from
/// SampleData, seeded by a hash of the input), so that a crash reproduces from the input file
/// alone and mutations of the input also explore different choices.
public struct InputRandom: RandomNumberGenerator {
    private var generator: SplitMix64

    /// Seeds from every byte of `input` (FNV-1a), and its length.
    public init(_ input: UnsafeRawBufferPointer) {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in input {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        generator = SplitMix64(seed: hash ^ UInt64(input.count))
    }

    public mutating func next() -> UInt64 { generator.next() }
}
