import CLZMA

/// The 12-byte Stream Header that starts every .xz stream: magic, stream flags (the check type)
/// and their CRC32.
public enum StreamHeader {
    /// Size of the Stream Header in bytes: 12.
    public static let size = Int(amk_lzma_stream_header_size)

    /// The xz magic bytes, FD 37 7A 58 5A 00.
    static let magic: [UInt8] = [0xFD, 0x37, 0x7A, 0x58, 0x5A, 0x00]

    /// Encodes a Stream Header for a stream whose blocks use `check`.
    public static func encode(check: XZCheck) -> [UInt8] {
        let flags: [UInt8] = [0x00, check.rawValue]
        let crc = CRC.crc32(flags)
        return magic + flags + withUnsafeBytes(of: crc.littleEndian, Array.init)
    }

    /// Decodes a Stream Header from the first 12 bytes of `bytes`.
    ///
    /// - Returns: the check type of the stream.
    /// - Throws: `XZError` naming `fileOffset`: `.truncated` for fewer than 12 bytes, `.format`
    ///   for wrong magic, `.data` for a CRC32 mismatch, `.options` for reserved flags,
    ///   `.unsupportedCheck` for a check type this package does not know.
    public static func decode(_ bytes: UnsafeRawBufferPointer, fileOffset: UInt64 = 0) throws -> XZCheck {
        guard bytes.count >= size, let base = bytes.baseAddress else {
            throw XZError(code: .truncated, message: "stream header needs \(size) bytes, only \(bytes.count) available", offset: fileOffset)
        }
        var flags = lzma_stream_flags()
        let ret = lzma_stream_header_decode(&flags, base.assumingMemoryBound(to: UInt8.self))
        switch ret {
        case LZMA_OK:
            break
        case LZMA_FORMAT_ERROR:
            let message =
                fileOffset == 0
                ? ForeignFormat.notXZMessage(bytes) : "not an xz stream: stream header magic bytes are wrong"
            throw XZError(code: .format, message: message, offset: fileOffset)
        case LZMA_DATA_ERROR:
            throw XZError(code: .data, message: "stream header CRC32 mismatch", offset: fileOffset)
        case LZMA_OPTIONS_ERROR:
            throw XZError(code: .options, message: "stream header has reserved flags set (newer or corrupt xz format)", offset: fileOffset)
        default:
            throw XZError(ret, "decoding stream header", offset: fileOffset)
        }
        return try XZCheck(decoded: flags.check, what: "stream header", fileOffset: fileOffset)
    }
}
