/// The framing of the transfer protocol, around the archive bytes.
///
/// ```
/// sender -> receiver   hello: "AMKXFER1", u32 LE protocol version, u32 LE flags (16 bytes)
/// receiver -> sender   hello: the same, with the receiver's version
/// sender -> receiver   the archive (one .xz stream), then shutdown(SHUT_WR)
/// receiver -> sender   status: u8 (0 imported, 1 failed), u32 LE length, UTF-8 message
/// ```
/// Both sides send their hello before looking at the other's, so a mismatch is reported on both
/// sides with both versions. The archive's end is its own end (the xz footer, after the index the
/// receiver verifies) followed by the sender's half-close; a stream that ends anywhere else fails
/// the import.
enum TransferFrame {
    static let magic = Array("AMKXFER1".utf8)
    static let protocolVersion: UInt32 = 1
    static let helloSize = 16
    static let maxMessageBytes = 64 << 10

    static func hello(version: UInt32 = protocolVersion, flags: UInt32 = 0) -> [UInt8] {
        magic + littleEndian(version) + littleEndian(flags)
    }

    /// The version in a hello, or nil if the bytes are not a hello.
    static func version(inHello bytes: [UInt8]) -> UInt32? {
        guard bytes.count == helloSize, Array(bytes[0..<8]) == magic else { return nil }
        return UInt32(bytes[8]) | UInt32(bytes[9]) << 8 | UInt32(bytes[10]) << 16 | UInt32(bytes[11]) << 24
    }

    static func status(ok: Bool, message: String) -> [UInt8] {
        let text = Array(message.utf8.prefix(maxMessageBytes))
        return [ok ? 0 : 1] + littleEndian(UInt32(text.count)) + text
    }

    static func length(inStatusHeader bytes: [UInt8]) -> Int {
        Int(UInt32(bytes[1]) | UInt32(bytes[2]) << 8 | UInt32(bytes[3]) << 16 | UInt32(bytes[4]) << 24)
    }

    static func littleEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value & 0xff), UInt8(value >> 8 & 0xff), UInt8(value >> 16 & 0xff), UInt8(value >> 24)]
    }
}
