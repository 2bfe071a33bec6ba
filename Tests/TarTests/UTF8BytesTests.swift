import Tar
import TestSupport
import Testing

struct UTF8BytesTests {
    /// Random byte strings, as lossless names, small (inline) and long (allocated) alike.
    @Test func answersAsTheGenericWalkDoes() {
        var rng = SeededGenerator(seed: 0x0B17E5)
        let interesting: [UInt8] = [0x00, 0x2F, 0x2E, 0x41, 0xC3, 0xA9, 0xCC, 0x81, 0xF4, 0x8F, 0xBF, 0xFF]
        var previous = ""
        for round in 0..<4000 {
            let count = Int.random(in: 0...(round % 2 == 0 ? 14 : 80), using: &rng)
            let bytes = (0..<count).map { _ in
                Bool.random(using: &rng) ? interesting.randomElement(using: &rng)! : UInt8.random(in: 0...255, using: &rng)
            }
            let text = RawName.decode(bytes)
            let copy = String(decoding: Array(text.utf8), as: UTF8.self)
            for byte in [UInt8(0), 0x2F, 0xF4, 0xA9] {
                #expect(UTF8Bytes.contains(byte, in: text) == text.utf8.contains(byte))
            }
            #expect(UTF8Bytes.equal(text, copy))
            #expect(UTF8Bytes.equal(text, previous) == text.utf8.elementsEqual(previous.utf8), "\(bytes)")
            previous = Bool.random(using: &rng) ? text : RawName.decode(bytes.shuffled(using: &rng))
        }
    }

    /// Canonically equivalent names are different files: `==` says equal, the bytes do not.
    @Test func canonicalEquivalentsAreDifferentBytes() {
        let composed = "caf\u{E9}"
        let decomposed = "cafe\u{301}"
        #expect(composed == decomposed)
        #expect(!UTF8Bytes.equal(composed, decomposed))
        #expect(UTF8Bytes.equal(composed, String(decoding: Array(composed.utf8), as: UTF8.self)))
        #expect(!UTF8Bytes.equal("a", "a\u{0}"))
        #expect(UTF8Bytes.contains(0, in: "a\u{0}b"))
        #expect(!UTF8Bytes.contains(0, in: String(repeating: "long name without a nul ", count: 4)))
    }

    @Test func optionalsAreEqualOnlyWhenBothAreNilOrTheSameBytes() {
        #expect(UTF8Bytes.equal(nil as String?, nil as String?))
        #expect(!UTF8Bytes.equal(nil as String?, ""))
        #expect(!UTF8Bytes.equal("" as String?, nil))
        #expect(UTF8Bytes.equal("target" as String?, "target"))
        #expect(!UTF8Bytes.equal("caf\u{E9}" as String?, "cafe\u{301}"))
    }

    @Test func buffersCompareByLengthAndBytes() {
        let a: [UInt8] = [1, 2, 3]
        a.withUnsafeBufferPointer { left in
            [1, 2, 3].withUnsafeBufferPointer { #expect(UTF8Bytes.equal(left, $0)) }
            [1, 2, 4].withUnsafeBufferPointer { #expect(!UTF8Bytes.equal(left, $0)) }
            [1, 2].withUnsafeBufferPointer { #expect(!UTF8Bytes.equal(left, $0)) }
            UnsafeBufferPointer<UInt8>(start: nil, count: 0).withMemoryRebound(to: UInt8.self) {
                #expect(!UTF8Bytes.equal(left, $0))
                #expect(UTF8Bytes.equal($0, $0))
            }
        }
    }

    /// A `/` after a prepended mark (U+0600) is one character with it: `hasSuffix("/")` misses it
    /// and `dropLast()` takes the mark too. The byte answers keep the name.
    @Test func trailingSlashIsAByte() {
        let folder = "x\u{600}/"
        #expect(!folder.hasSuffix("/"), "the premise")
        #expect(UTF8Bytes.endsWithSlash(folder))
        #expect(Array(UTF8Bytes.droppingTrailingSlash(folder).utf8) == Array("x\u{600}".utf8))
        #expect(UTF8Bytes.droppingTrailingSlash("a/b") == "a/b")
        #expect(UTF8Bytes.droppingTrailingSlash("a//") == "a/", "one slash at a time")
        #expect(!UTF8Bytes.endsWithSlash(""))
    }
}
