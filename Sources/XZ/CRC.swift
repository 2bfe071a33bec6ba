import CLZMA

/// The CRC32 and CRC64 (ECMA-182) of the xz format, computed by liblzma's table-driven code.
///
/// Pass the previous result as `previous` to checksum data that arrives in pieces; the result equals
/// the one-shot checksum of the concatenation.
public enum CRC {
    /// CRC32 of `bytes`, continuing from `previous` (`lzma_crc32`).
    public static func crc32(_ bytes: UnsafeRawBufferPointer, previous: UInt32 = 0) -> UInt32 {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return previous }
        return lzma_crc32(base.assumingMemoryBound(to: UInt8.self), bytes.count, previous)
    }

    /// CRC64 of `bytes`, continuing from `previous` (`lzma_crc64`).
    public static func crc64(_ bytes: UnsafeRawBufferPointer, previous: UInt64 = 0) -> UInt64 {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return previous }
        return lzma_crc64(base.assumingMemoryBound(to: UInt8.self), bytes.count, previous)
    }

    /// CRC32 of `bytes`, continuing from `previous`.
    public static func crc32(_ bytes: [UInt8], previous: UInt32 = 0) -> UInt32 {
        bytes.withUnsafeBytes { crc32($0, previous: previous) }
    }

    /// CRC64 of `bytes`, continuing from `previous`.
    public static func crc64(_ bytes: [UInt8], previous: UInt64 = 0) -> UInt64 {
        bytes.withUnsafeBytes { crc64($0, previous: previous) }
    }

    /// CRC64 of `count` zero bytes, continuing from `previous`, in time that grows with the
    /// logarithm of `count`: a file's holes are checksummed without reading or scanning them.
    ///
    /// A zero byte multiplies the (uninverted) register by x⁸ modulo the polynomial, so `count`
    /// of them multiply it by x^(8·count), which is assembled from the powers x^(2^k) as zlib's
    /// `crc32_combine` does.
    public static func crc64(zeros count: UInt64, previous: UInt64 = 0) -> UInt64 {
        var power: UInt64 = 1 << 63  // x⁰, bits reflected as in the register
        var remaining = count
        var k = 3  // x^(8·count) = x^(count·2³)
        while remaining != 0 {
            if remaining & 1 != 0 { power = multiplyModulo(powersOfTwo[k & 63], power) }
            remaining >>= 1
            k += 1
        }
        return ~multiplyModulo(power, ~previous)
    }

    /// ECMA-182, reflected, as liblzma's table uses it.
    private static let polynomial: UInt64 = 0xC96C_5795_D787_0F42

    /// `a · b` modulo the polynomial, both reflected.
    private static func multiplyModulo(_ a: UInt64, _ b: UInt64) -> UInt64 {
        var mask: UInt64 = 1 << 63
        var product: UInt64 = 0
        var b = b
        while true {
            if a & mask != 0 {
                product ^= b
                if a & (mask - 1) == 0 { break }
            }
            mask >>= 1
            b = b & 1 != 0 ? (b >> 1) ^ polynomial : b >> 1
        }
        return product
    }

    /// x^(2^k) modulo the polynomial for k in 0..<64; x^(2^64) follows x^(2^63) only in theory,
    /// as no count reaches it.
    private static let powersOfTwo: [UInt64] = {
        var table: [UInt64] = []
        var power: UInt64 = 1 << 62  // x¹
        for _ in 0..<64 {
            table.append(power)
            power = multiplyModulo(power, power)
        }
        return table
    }()
}
