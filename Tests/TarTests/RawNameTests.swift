import Tar
import TestSupport
import Testing

struct RawNameTests {
    /// Any byte string survives decode then encode: random bytes, biased towards the lead and
    /// continuation bytes that make UTF-8 almost valid, and towards 0xF4 0x8F 0xBE/0xBF, which
    /// spell characters of the escape range itself.
    @Test func encodeOfDecodeGivesTheBytesBack() {
        var rng = SeededGenerator(seed: 0xB17E5)
        let interesting: [UInt8] = [0x00, 0x2F, 0x41, 0x7F, 0x80, 0xBF, 0xC0, 0xC2, 0xC3, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0x8F, 0xBE, 0xFF]
        for _ in 0..<5000 {
            let count = Int.random(in: 0...12, using: &rng)
            let bytes = (0..<count).map { _ in
                Bool.random(using: &rng) ? interesting.randomElement(using: &rng)! : UInt8.random(in: 0...255, using: &rng)
            }
            let text = RawName.decode(bytes)
            #expect(RawName.encode(text) == bytes, "\(bytes)")
            var viaC: [UInt8] = []
            RawName.withCString(text) { pointer in
                var cursor = pointer
                while cursor.pointee != 0 {
                    viaC.append(UInt8(bitPattern: cursor.pointee))
                    cursor += 1
                }
            }
            #expect(viaC == Array(bytes.prefix { $0 != 0 }), "the C string is the bytes up to a NUL")
        }
    }

    /// Valid UTF-8 is the ordinary string, so every name that is UTF-8 looks as it always did.
    @Test(arguments: ["", "notes/todo.txt", "photos/été/猫.jpg", "emoji/👩‍👩‍👧.png", "a\u{FFFD}b", "\u{10FF7F}"])
    func validUTF8DecodesAsItself(text: String) {
        #expect(RawName.decode(Array(text.utf8)) == text)
        #expect(!RawName.holdsEscapes(text))
        #expect(RawName.encode(text) == Array(text.utf8))
    }

    /// A truncated sequence is repaired to U+FFFD by `String(decoding:)`, whose bytes are valid
    /// UTF-8 too: the name must still be taken as invalid and escaped, never read as U+FFFD.
    @Test(arguments: [[0xEF, 0xBF], [0x61, 0xEF, 0xBF, 0x62], [0xED, 0xA0, 0x80], [0xC0, 0xAF], [0xF4, 0x90, 0x80, 0x80]] as [[UInt8]])
    func bytesThatRepairToAReplacementCharacterStayThemselves(bytes: [UInt8]) {
        let text = RawName.decode(bytes)
        #expect(RawName.encode(text) == bytes)
        #expect(!text.unicodeScalars.contains("\u{FFFD}"))
        #expect(RawName.holdsEscapes(text))
    }

    /// Bytes that are not UTF-8 become distinct scalars: U+10FF00 + byte.
    @Test func invalidBytesBecomeEscapeScalars() {
        #expect(RawName.decode([0x63, 0x61, 0x66, 0xE9]) == "caf\u{10FFE9}")
        #expect(RawName.decode([0xC3]) == "\u{10FFC3}", "a truncated sequence")
        #expect(RawName.decode([0xC0, 0x80]) == "\u{10FFC0}\u{10FF80}", "an overlong NUL")
        #expect(RawName.decode([0xED, 0xA0, 0x80]) == "\u{10FFED}\u{10FFA0}\u{10FF80}", "a surrogate")
        #expect(RawName.holdsEscapes(RawName.decode([0xFF])))
    }

    /// A name that really holds a character of the escape range is escaped byte by byte, so it
    /// cannot be confused with the bytes those characters stand for.
    @Test func charactersOfTheEscapeRangeAreThemselvesEscaped() {
        let real = "\u{10FFE9}"
        let bytes = Array(real.utf8)
        let decoded = RawName.decode(bytes)
        #expect(decoded != real)
        #expect(decoded.unicodeScalars.count == 4)
        #expect(RawName.encode(decoded) == bytes)
        #expect(RawName.decode([0xE9]) != decoded)
    }

    @Test func escapedByteAndEscapeAreInverse() {
        for byte in UInt8(0x80)...UInt8(0xFF) {
            #expect(RawName.escapedByte(RawName.escape(byte)) == byte)
        }
        #expect(RawName.escapedByte("a") == nil)
        #expect(RawName.escapedByte("\u{10FF7F}") == nil)
    }
}
