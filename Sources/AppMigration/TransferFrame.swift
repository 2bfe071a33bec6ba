/// The framing of the transfer protocol, around the archive bytes.
///
/// ```
/// sender -> receiver   hello: "AMKXFER1", u32 LE protocol version (2), u32 LE flags (0, or refused),
///                      32-byte X25519 public key                                  (48 bytes)
/// receiver -> sender   hello: the same, with the receiver's version and key
/// sender -> receiver   confirmation: HMAC-SHA256 proving it holds the pairing code (32 bytes)
/// receiver -> sender   confirmation: the same for the receiver                     (32 bytes)
/// sender -> receiver   records: the archive (one .xz stream) in data records, then an end record
/// receiver -> sender   one record: the status (imported, or failed and why)
/// ```
/// A record is a u32 LE length, then the ChaCha20-Poly1305 sealed type byte and payload (at most
/// 64 KiB) with its tag (see ``SecureChannel``). Both sides send their hello's first 16 bytes
/// before looking at the other's, so a mismatch is reported on both sides with both versions; a
/// receiver that finds the sender's confirmation wrong closes the connection without its own.
package enum TransferFrame {
    static let magic = Array("AMKXFER1".utf8)
    package static let protocolVersion: UInt32 = 2
    /// The part of a hello every version shares: magic, version and flags.
    static let helloHeaderSize = 16
    /// An X25519 public key.
    static let publicKeySize = 32
    /// The longest status message a receiver sends.
    static let maxMessageBytes = 16 << 10

    package static func hello(publicKey: [UInt8], version: UInt32 = protocolVersion, flags: UInt32 = 0) -> [UInt8] {
        magic + littleEndian(version) + littleEndian(flags) + publicKey
    }

    /// The version in a hello's first 16 bytes, or nil if they are not a hello.
    static func version(inHello bytes: [UInt8]) -> UInt32? {
        guard bytes.count >= helloHeaderSize, Array(bytes[0..<8]) == magic else { return nil }
        return UInt32(bytes[8]) | UInt32(bytes[9]) << 8 | UInt32(bytes[10]) << 16 | UInt32(bytes[11]) << 24
    }

    /// The flags in a hello's first 16 bytes (already known to be a hello).
    static func flags(inHello bytes: [UInt8]) -> UInt32 {
        UInt32(bytes[12]) | UInt32(bytes[13]) << 8 | UInt32(bytes[14]) << 16 | UInt32(bytes[15]) << 24
    }

    /// Why a hello's flags are refused, or nil for the flags this version defines (none). A
    /// flag stands for something a peer changes in the protocol: ignored, it would leave the two
    /// sides speaking two protocols under one version.
    static func refusal(ofFlags flags: UInt32, from peer: String) -> TransferError? {
        guard flags != 0 else { return nil }
        let hex = String(flags, radix: 16)
        return TransferError(
            .notAPeer,
            "\(peer)'s hello sets flags 0x\(String(repeating: "0", count: 8 - hex.count) + hex), which transfer protocol "
                + "version \(protocolVersion) does not define (all are 0)")
    }

    static func littleEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value & 0xff), UInt8(value >> 8 & 0xff), UInt8(value >> 16 & 0xff), UInt8(value >> 24)]
    }
}
