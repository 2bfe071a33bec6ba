import Tar
import TestSupport
import Testing

struct ExactNameTests {
    /// Pairs that `String` calls equal and the file system keeps apart.
    static let equivalents: [(String, String)] = [
        ("caf\u{E9}", "cafe\u{301}"),  // precomposed and decomposed
        ("K", "\u{212A}"),  // Kelvin sign
        (";", "\u{37E}"),  // Greek question mark
        ("\u{C5}", "\u{212B}"),  // Angstrom sign
        ("a\u{301}\u{323}", "a\u{323}\u{301}")  // combining marks in either order
    ]

    @Test func canonicalEquivalentsAreDistinctKeys() {
        for (a, b) in Self.equivalents {
            #expect(a == b, "the premise: Swift calls \(a.unicodeScalars.map(\.value)) and \(b.unicodeScalars.map(\.value)) equal")
            #expect(ExactName(a) != ExactName(b))
            #expect(Set([ExactName(a), ExactName(b)]).count == 2)
            var table: [ExactName: Int] = [:]
            table[ExactName(a)] = 1
            table[ExactName(b)] = 2
            #expect(table[ExactName(a)] == 1 && table[ExactName(b)] == 2)
            #expect(Set([a]).contains(b), "the premise: a set of strings finds the other")
        }
    }

    /// Equal bytes are one key however the string was made, and the hash follows the bytes:
    /// random byte names, as the archive holds them, against copies made from their UTF-8.
    @Test func equalBytesAreOneKey() {
        var rng = SeededGenerator(seed: 0xE8AC7)
        var seen: Set<ExactName> = []
        var distinct: Set<[UInt8]> = []
        for _ in 0..<3000 {
            let alphabet: [UInt8] = [0x2F, 0x41, 0x65, 0xC3, 0xA9, 0xCC, 0x81, 0xE2, 0x84, 0xAA, 0xFF]
            let count = Int.random(in: 0...24, using: &rng)
            var bytes: [UInt8] = []
            for _ in 0..<count { bytes.append(alphabet.randomElement(using: &rng)!) }
            let name = RawName.decode(bytes)
            let copy = String(decoding: Array(name.utf8), as: UTF8.self)
            #expect(ExactName(name) == ExactName(copy))
            #expect(ExactName(name).hashValue == ExactName(copy).hashValue)
            seen.insert(ExactName(copy))
            distinct.insert(Array(name.utf8))
        }
        #expect(seen.count == distinct.count, "one key per byte string, never fewer")
    }
}
