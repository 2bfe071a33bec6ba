/// Pseudo-random choices derived from the input itself (SplitMix64 seeded by a hash of it), so
/// that a crash reproduces from the input file alone and mutations of the input also explore
/// different choices.
public struct InputRandom: RandomNumberGenerator {
    private var state: UInt64

    /// Seeds from every byte of `input` (FNV-1a), and its length.
    public init(_ input: UnsafeRawBufferPointer) {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in input {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        state = hash ^ UInt64(input.count)
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
