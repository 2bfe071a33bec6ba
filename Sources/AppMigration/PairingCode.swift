/// The one-time code that pairs a sender with the receiver that printed it.
///
/// The receiver draws a new code for each run and shows it; the person moving their data types or
/// pastes it on the sending side. Both sides mix it into the keys of the transfer (see
/// ``MigrationSystem/receive(_:named:into:on:pairingCode:acceptTimeout:idleTimeout:maxArchiveBytes:maxFailedPairings:onRefused:progress:)``),
/// so a sender without it is refused before a byte reaches the container, and a receiver without
/// it cannot read what a sender sends.
///
/// 16 characters of Crockford's base32 (digits and capitals without I, L, O and U), shown in four
/// groups: `7KQ2-9XMF-3PWD-HB6T`. That is 80 bits: guessing online is hopeless within the few
/// attempts a receiver allows, and so is testing guesses offline against a recorded handshake
/// (2^80 key derivations), which matters because the handshake is a key agreement confirmed by
/// the code rather than a password-authenticated key exchange (swift-crypto offers none).
/// Parsing forgives what people do when typing: lower case, missing or extra dashes and spaces,
/// and `I`/`L` for `1`, `O` for `0`.
public struct PairingCode: Sendable, Hashable, CustomStringConvertible {
    /// Crockford's base32 alphabet.
    static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)
    /// Characters in a code.
    public static let length = 16

    /// The code's characters, canonical (upper case, no separators).
    let characters: [UInt8]

    /// A new random code, from the system's cryptographically secure generator.
    public static func random() -> PairingCode {
        var generator = SystemRandomNumberGenerator()
        return PairingCode(characters: (0..<length).map { _ in alphabet[Int.random(in: 0..<32, using: &generator)] })
    }

    private init(characters: [UInt8]) {
        self.characters = characters
    }

    /// Reads a code as a person typed it.
    /// - Throws: ``TransferError`` `.invalidPairingCode` naming what is wrong.
    public init(parsing text: String) throws {
        var characters: [UInt8] = []
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "-"), UInt8(ascii: " "):
                continue
            case UInt8(ascii: "a")...UInt8(ascii: "z"):
                characters.append(Self.canonical(byte - 32))
            default:
                characters.append(Self.canonical(byte))
            }
        }
        guard characters.count == Self.length else {
            throw TransferError(
                .invalidPairingCode,
                "a pairing code has \(Self.length) characters (like 7KQ2-9XMF-3PWD-HB6T), "
                    + "not \(characters.count)")
        }
        if let bad = characters.first(where: { !Self.alphabet.contains($0) }) {
            throw TransferError(
                .invalidPairingCode,
                "'\(TerminalSafeCharacter.describe(bad))' cannot be part of a pairing code "
                    + "(digits and letters other than U)")
        }
        self.characters = characters
    }

    /// The characters people confuse, read as the digit they stand for.
    private static func canonical(_ byte: UInt8) -> UInt8 {
        switch byte {
        case UInt8(ascii: "I"), UInt8(ascii: "L"): UInt8(ascii: "1")
        case UInt8(ascii: "O"): UInt8(ascii: "0")
        default: byte
        }
    }

    /// The code in four groups of four, as the receiver shows it.
    public var description: String {
        stride(from: 0, to: Self.length, by: 4)
            .map { String(decoding: characters[$0..<$0 + 4], as: UTF8.self) }
            .joined(separator: "-")
    }
}

/// One byte of a typed code, for an error message: printable ASCII as itself, anything else as hex.
enum TerminalSafeCharacter {
    static func describe(_ byte: UInt8) -> String {
        (0x21...0x7E).contains(byte) ? String(UnicodeScalar(byte)) : "\\x" + String(byte, radix: 16)
    }
}
