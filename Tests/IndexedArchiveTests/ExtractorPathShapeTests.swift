import Tar
import TestSupport
import Testing

@testable import IndexedArchive

extension EngineSuites {
    /// `Extractor.shape(of:allowAbsolute:)`, the loop that splits every member's path, held to
    /// the plain definition on random paths made of the bytes that matter: `/`, `.`, NUL, and a
    /// few others, valid UTF-8 or not.
    @Suite(.background) struct ExtractorPathShapeTests {
        /// The definition: refuse a NUL anywhere, then a leading `/` unless allowed, then the
        /// first `..` component; drop `.` and empty components; refuse what is left empty.
        static func reference(_ bytes: [UInt8], allowAbsolute: Bool) -> Extractor.PathShape {
            if bytes.contains(0) { return .nul }
            if bytes.first == UInt8(ascii: "/") && !allowAbsolute { return .absolute }
            var parts: [String] = []
            for part in bytes.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true) {
                if part.elementsEqual(".".utf8) { continue }
                if part.elementsEqual("..".utf8) { return .dotDot }
                parts.append(String(decoding: part, as: UTF8.self))
            }
            return parts.isEmpty ? .empty : .parts(parts)
        }

        @Test(arguments: [false, true])
        func matchesTheDefinitionOnRandomPaths(allowAbsolute: Bool) {
            var rng = SeededGenerator(seed: allowAbsolute ? 0xAB5 : 0x5AFE)
            let alphabet: [UInt8] = [0x2F, 0x2F, 0x2E, 0x2E, 0x2E, 0x00, 0x61, 0x62, 0xC3, 0xA9, 0xE2, 0x88, 0x95, 0xFF]
            for _ in 0..<20_000 {
                let bytes = (0..<Int.random(in: 0...12, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! }
                // Names reach the extractor as lossless strings (RawName); the split sees their bytes.
                let text = RawName.decode(bytes)
                let found = Array(text.utf8).withUnsafeBufferPointer { Extractor.shape(of: $0, allowAbsolute: allowAbsolute) }
                #expect(found == Self.reference(Array(text.utf8), allowAbsolute: allowAbsolute), "\(bytes)")
            }
        }

        @Test func examples() {
            func shape(_ path: String, allowAbsolute: Bool = false) -> Extractor.PathShape {
                Array(path.utf8).withUnsafeBufferPointer { Extractor.shape(of: $0, allowAbsolute: allowAbsolute) }
            }
            #expect(shape("a//b/./c/") == .parts(["a", "b", "c"]))
            #expect(shape("./") == .empty)
            #expect(shape("") == .empty)
            #expect(shape("a/../b") == .dotDot)
            #expect(shape("a/..") == .dotDot)
            #expect(shape("a/...") == .parts(["a", "..."]))
            #expect(shape("/etc/passwd") == .absolute)
            #expect(shape("//etc/passwd", allowAbsolute: true) == .parts(["etc", "passwd"]))
            #expect(shape("/../x", allowAbsolute: true) == .dotDot)
            #expect(shape("a\u{0}/../../x") == .nul)
            // A combining mark after '/' or '.' leaves the bytes '/' and '.' where they are.
            #expect(shape("../\u{301}x") == .dotDot)
            #expect(shape("a/\u{301}") == .parts(["a", "\u{301}"]))
        }
    }
}
