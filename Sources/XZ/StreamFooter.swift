import CLZMA

/// The 12-byte Stream Footer that ends every .xz stream: CRC32, backward size (the size of the
/// xz Index), stream flags and the magic "YZ".
public enum StreamFooter {
    /// Size of the Stream Footer in bytes: 12.
    public static let size = Int(amk_lzma_stream_header_size)

    /// Encodes a Stream Footer.
    ///
    /// - Parameters:
    ///   - check: the stream's check type, as in its header.
    ///   - indexSize: size of the encoded xz Index in bytes (``XZIndexBuilder/encoded()``'s count),
    ///     a multiple of four within 4...2^34 as the format requires; other values cannot be
    ///     represented and produce a footer that decoders reject.
    public static func encode(check: XZCheck, indexSize: UInt64) -> [UInt8] {
        let backward = UInt32(truncatingIfNeeded: indexSize / 4 &- 1)
        var fields = withUnsafeBytes(of: backward.littleEndian, Array.init)
        fields += [0x00, check.rawValue]
        let crc = CRC.crc32(fields)
        return withUnsafeBytes(of: crc.littleEndian, Array.init) + fields + [0x59, 0x5A]
    }

    /// Decodes a Stream Footer from the first 12 bytes of `bytes`.
    ///
    /// - Returns: the check type and the backward size, that is the size in bytes of the xz Index
    ///   that precedes the footer.
    /// - Throws: `XZError` naming `fileOffset`: `.truncated` for fewer than 12 bytes, `.format`
    ///   for wrong magic, `.data` for a CRC32 mismatch, `.options` for reserved flags,
    ///   `.unsupportedCheck` for an unknown check type.
    public static func decode(_ bytes: UnsafeRawBufferPointer, fileOffset: UInt64 = 0) throws -> (check: XZCheck, indexSize: UInt64) {
        guard bytes.count >= size, let base = bytes.baseAddress else {
            throw XZError(code: .truncated, message: "stream footer needs \(size) bytes, only \(bytes.count) available", offset: fileOffset)
        }
        var flags = lzma_stream_flags()
        let ret = lzma_stream_footer_decode(&flags, base.assumingMemoryBound(to: UInt8.self))
        switch ret {
        case LZMA_OK:
            break
        case LZMA_FORMAT_ERROR:
            throw XZError(code: .format, message: "stream footer magic bytes \"YZ\" are missing", offset: fileOffset)
        case LZMA_DATA_ERROR:
            throw XZError(code: .data, message: "stream footer CRC32 mismatch", offset: fileOffset)
        case LZMA_OPTIONS_ERROR:
            throw XZError(code: .options, message: "stream footer has reserved flags set (newer or corrupt xz format)", offset: fileOffset)
        default:
            throw XZError(ret, "decoding stream footer", offset: fileOffset)
        }
        let check = try XZCheck(decoded: flags.check, what: "stream footer", fileOffset: fileOffset)
        return (check, flags.backward_size)
    }
}
