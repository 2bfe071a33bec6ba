import Testing

@testable import amk

extension AMKTests {
    @Suite struct OptionSpellingTests {
        /// The spelling comes from ArgumentParser's description of each command, so it holds
        /// every option the command declares.
        @Test func theSpellingKnowsEveryOptionOfBothCommands() throws {
            let extract = try #require(OptionSpelling.of("extract"))
            #expect(extract.takingValues.isSuperset(of: ["-C", "--directory", "-T", "--files-from", "--strip-components", "--max-bytes"]))
            #expect(extract.flags.isSuperset(of: ["-q", "--quiet", "--json", "-O", "--to-stdout", "-h", "--help"]))
            #expect(extract.takingValues.isDisjoint(with: extract.flags))
            let list = try #require(OptionSpelling.of("list"))
            #expect(list.takingValues.isSuperset(of: ["-T", "--files-from"]))
            #expect(list.flags.isSuperset(of: ["-l", "--long", "--json"]))
            #expect(OptionSpelling.of("pack") == nil)
        }
    }
}
