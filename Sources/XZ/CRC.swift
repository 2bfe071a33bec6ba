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
}
