import TestSupport
import Testing

@testable import IndexedArchive

extension EngineSuites {
    /// Paths cut at `/` bytes, never at Swift's characters.
    @Suite struct PathBytesTests {
        /// The last component is the last of ``PathBytes/components(_:)``, its definition, on
        /// paths of slashes, dots, letters and a combining mark (which a `Character` walk would
        /// glue to the slash before it).
        @Test func lastComponentIsTheLastOfTheComponents() {
            var generator = SeededGenerator(seed: 0x1a57)
            let pieces = ["/", "/", "a", "b", ".", "\u{301}", "\u{E9}"]
            for _ in 0..<2_000 {
                let path = (0..<Int.random(in: 0...8, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
                let expected = PathBytes.components(path).last
                let got = PathBytes.lastComponent(path)
                #expect(got.map { Array($0.utf8) } == expected.map { Array($0.utf8) }, "\(Array(path.utf8))")
            }
            #expect(PathBytes.lastComponent("a/b/") == "b")
            #expect(PathBytes.lastComponent("//") == nil)
            #expect(PathBytes.lastComponent("") == nil)
            #expect(PathBytes.lastComponent("/\u{301}").map { Array($0.utf8) } == [0xCC, 0x81])
        }
    }
}
