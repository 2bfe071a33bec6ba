/// The variable-length integers of the xz format: 7 bits per byte, least significant first, at
/// most 9 bytes, values up to 2^63 - 1, and no superfluous trailing zero byte.
enum VLI {
    /// Largest value a VLI may hold (`LZMA_VLI_MAX`).
    static let max: UInt64 = UInt64.max / 2
    /// Longest encoding in bytes.
    static let maxBytes = 9

    /// Appends the encoding of `value` (which must be at most `max`) to `out`.
    static func append(_ value: UInt64, to out: inout [UInt8]) {
        var v = value
        while v >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
    }

    /// Decodes one VLI, pulling bytes from `next`. Returns nil for an invalid encoding (too long,
    /// or a non-minimal trailing zero byte).
    static func decode(_ next: () throws -> UInt8) rethrows -> UInt64? {
        var value: UInt64 = 0
        for i in 0..<maxBytes {
            let byte = try next()
            value |= UInt64(byte & 0x7F) << (7 * UInt64(i))
            if byte & 0x80 == 0 {
                if byte == 0 && i > 0 { return nil }
                return value
            }
        }
        return nil
    }
}
