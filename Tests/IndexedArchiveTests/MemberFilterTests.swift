import IndexedArchive
import Tar
import TestSupport
import Testing

extension EngineSuites {
    @Suite struct MemberFilterTests {
        @Test func namesAreKeptByTheirBytesInTheOrderGiven() {
            let filter = MemberFilter(["b", "caf\u{E9}", "cafe\u{301}", "b", "a/", "a"])
            #expect(filter.names.map { Array($0.utf8) } == ["b", "caf\u{E9}", "cafe\u{301}", "a/", "a"].map { Array($0.utf8) })
            #expect(filter.distinctNames == 4, "a folder's trailing / is not part of its name")
            #expect(filter.contains(exactly: "a") && filter.contains(exactly: "cafe\u{301}") && !filter.contains(exactly: "a/"))
            #expect(filter == MemberFilter(["a", "b", "cafe\u{301}", "caf\u{E9}"]))
            #expect(filter != MemberFilter(["a", "b", "caf\u{E9}"]), "one of the twins missing")
        }

        /// The lookup of many names (past ``TarConsumer/fewMembers``) answers as the walk over
        /// few does, on random paths built from twins, slashes and their neighbours.
        @Test func manyAndFewAnswerAlike() {
            var rng = SeededGenerator(seed: 0xF1173)
            let parts = ["caf\u{E9}", "cafe\u{301}", "K", "\u{212A}", "x", "x/", "/", ""]
            func path() -> String {
                (0..<Int.random(in: 1...4, using: &rng)).map { _ in parts.randomElement(using: &rng)! }.joined(separator: "/")
            }
            for _ in 0..<300 {
                let names = (0..<Int.random(in: 1...4, using: &rng)).map { _ in path() }
                let few = MemberFilter(names)
                let many = MemberFilter(names + (0..<20).map { "unrelated-\($0)" })
                for _ in 0..<20 {
                    let candidate = path()
                    #expect(few.selects(candidate) == many.selects(candidate), "\(candidate.unicodeScalars.map(\.value)) by \(names)")
                    // Each name as given, or with its runs of `/` made one, as GNU tar reads it.
                    let byBytes = names.flatMap { [$0, MemberFilter.collapsed($0)] }.contains { name in
                        let base = Array(UTF8Bytes.droppingTrailingSlash(name).utf8)
                        let bytes = Array(UTF8Bytes.droppingTrailingSlash(candidate).utf8)
                        return bytes == base || (bytes.starts(with: base) && bytes.count > base.count && bytes[base.count] == 0x2F)
                    }
                    #expect(few.selects(candidate) == byBytes, "\(candidate.unicodeScalars.map(\.value)) by \(names)")
                }
            }
        }
    }
}
