import Foundation

extension UnsafeRawBufferPointer {
    /// Whether every byte is zero (false when there is none): `memcmp` of the bytes against
    /// themselves shifted by one, after the first, which needs no buffer of zeros to compare with.
    /// The compressor asks it of every chunk and `ExtractOptions.sparse` of every block, so it
    /// must cost no more than a pass of `memcmp`, which stops at the first byte that differs.
    var isAllZero: Bool {
        guard let base = baseAddress, let first else { return false }
        return first == 0 && memcmp(base, base + 1, count - 1) == 0
    }
}
