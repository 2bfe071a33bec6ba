/// Names as the kernel and tar hold them, bytes that need not be UTF-8, carried in a `String`.
///
/// A Unix file name, a link target, a tar path or an owner name is any byte string without NUL
/// (and, for a component, without `/`). Swift's `String` holds only Unicode, so a name such as
/// `caf\xE9` (Latin-1) cannot be held as its bytes, and decoding it with U+FFFD would change the
/// name: two different files could then map to one string, and the file written back would not be
/// the one read. Rather than carry byte arrays through every layer, the package maps each byte
/// that is not part of valid UTF-8 to one scalar of a private-use range, U+10FF80 + (byte - 0x80),
/// the way Python's `surrogateescape` maps such bytes to lone surrogates (which a Swift `String`
/// cannot hold).
///
/// The mapping is lossless for every byte string: ``encode(_:)`` of ``decode(_:)`` gives back the
/// bytes. To keep it so, a name whose UTF-8 happens to spell a character of that range (U+10FF80
/// to U+10FFFF, unassigned and private) has the four bytes of that character escaped one by one.
/// Valid UTF-8 outside that range decodes to the very same `String` as `String(decoding:)` would
/// give, so ordinary names are untouched and cost only a scan. In short: byte `b` that is not
/// part of valid UTF-8 is the character U+10FF00 + `b`, which is also how JSON output carries it.
public enum RawName {
    /// The first scalar of the escape range; byte `b` (0x80...0xFF) maps to `base + (b - 0x80)`.
    static let base: UInt32 = 0x10_FF80

    /// A name's text for the given bytes, lossless: see the type's discussion.
    public static func decode(_ bytes: some Collection<UInt8>) -> String {
        // Every escaped scalar is encoded in UTF-8 starting with 0xF4: without that byte, valid
        // UTF-8 is decoded as is.
        if !bytes.contains(0xF4), let valid = validUTF8(bytes) { return valid }
        let array = Array(bytes)
        var scalars = String.UnicodeScalarView()
        var index = 0
        while index < array.count {
            let length = sequenceLength(array, at: index)
            if length > 0 {
                let scalar = decodeScalar(array, at: index, length: length)
                if scalar.value >= base {
                    for byte in array[index..<index + length] { scalars.append(escape(byte)) }
                } else {
                    scalars.append(scalar)
                }
                index += length
            } else {
                let byte = array[index]
                // A lone byte below 0x80 is always valid: only bytes from 0x80 up are escaped.
                scalars.append(byte < 0x80 ? Unicode.Scalar(byte) : escape(byte))
                index += 1
            }
        }
        return String(scalars)
    }

    /// The bytes that `text` names: escaped scalars become their byte, everything else its UTF-8.
    public static func encode(_ text: String) -> [UInt8] {
        guard holdsEscapes(text) else { return Array(text.utf8) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            if scalar.value >= base {
                bytes.append(UInt8(scalar.value - base + 0x80))
            } else {
                bytes.append(contentsOf: UTF8.encode(scalar)!)
            }
        }
        return bytes
    }

    /// Whether `text` names bytes that are not valid UTF-8 (it holds an escaped byte).
    public static func holdsEscapes(_ text: String) -> Bool {
        UTF8Bytes.contains(0xF4, in: text) && text.unicodeScalars.contains { $0.value >= base }
    }

    /// `bytes` as a string if they are valid UTF-8. On contiguous bytes, decoding and comparing is
    /// the check: `String(decoding:)` replaces each invalid sequence with U+FFFD, whose bytes
    /// cannot stand where an invalid sequence stood, so the text has the input's bytes exactly
    /// when nothing was invalid. (`String(validating:)` reaches the runtime's generic metadata
    /// for every call, which made it most of the cost of reading a tar header's names.)
    static func validUTF8(_ bytes: some Collection<UInt8>) -> String? {
        let decoded = bytes.withContiguousStorageIfAvailable { buffer -> String? in
            let text = String(decoding: buffer, as: UTF8.self)
            let same = text.utf8.withContiguousStorageIfAvailable { UTF8Bytes.equal($0, buffer) } ?? text.utf8.elementsEqual(buffer)
            return same ? text : nil
        }
        return decoded ?? String(validating: bytes, as: UTF8.self)
    }

    /// Calls `body` with `text`'s bytes as a NUL-terminated C string, for the system calls.
    public static func withCString<Result>(_ text: String, _ body: (UnsafePointer<CChar>) -> Result) -> Result {
        guard holdsEscapes(text) else { return text.withCString(body) }
        var bytes = encode(text)
        bytes.append(0)
        return bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { body($0.baseAddress!) }
        }
    }

    /// The byte that `scalar` stands for, if it is an escaped byte.
    public static func escapedByte(_ scalar: Unicode.Scalar) -> UInt8? {
        scalar.value >= base ? UInt8(scalar.value - base + 0x80) : nil
    }

    /// The scalar standing for `byte` (0x80 or above) in a name that is not UTF-8.
    public static func escape(_ byte: UInt8) -> Unicode.Scalar {
        precondition(byte >= 0x80, "only bytes from 0x80 up are escaped")
        return Unicode.Scalar(base + UInt32(byte) - 0x80)!
    }

    /// The length of the well-formed UTF-8 sequence at `index` (Unicode's table 3-7), or 0.
    private static func sequenceLength(_ bytes: [UInt8], at index: Int) -> Int {
        let lead = bytes[index]
        func continuation(_ offset: Int, _ range: ClosedRange<UInt8> = 0x80...0xBF) -> Bool {
            index + offset < bytes.count && range.contains(bytes[index + offset])
        }
        switch lead {
        case 0x00...0x7F: return 1
        case 0xC2...0xDF: return continuation(1) ? 2 : 0
        case 0xE0: return continuation(1, 0xA0...0xBF) && continuation(2) ? 3 : 0
        case 0xE1...0xEC, 0xEE...0xEF: return continuation(1) && continuation(2) ? 3 : 0
        case 0xED: return continuation(1, 0x80...0x9F) && continuation(2) ? 3 : 0
        case 0xF0: return continuation(1, 0x90...0xBF) && continuation(2) && continuation(3) ? 4 : 0
        case 0xF1...0xF3: return continuation(1) && continuation(2) && continuation(3) ? 4 : 0
        case 0xF4: return continuation(1, 0x80...0x8F) && continuation(2) && continuation(3) ? 4 : 0
        default: return 0
        }
    }

    private static func decodeScalar(_ bytes: [UInt8], at index: Int, length: Int) -> Unicode.Scalar {
        let lead = UInt32(bytes[index])
        var value: UInt32
        switch length {
        case 1: return Unicode.Scalar(UInt8(lead))
        case 2: value = lead & 0x1F
        case 3: value = lead & 0x0F
        default: value = lead & 0x07
        }
        for offset in 1..<length { value = value << 6 | UInt32(bytes[index + offset] & 0x3F) }
        return Unicode.Scalar(value)!
    }
}
