import Testing

@testable import amk

extension AMKTests {
    /// Which command lines take the plain listing's direct path, and which ArgumentParser parses.
    @Suite struct ListCommandTests {
        @Test(
            arguments: [
                (["amk", "list", "a.tar.xz"], "a.tar.xz"), (["amk", "list", "-"], "-"),
                (["amk", "list", "dir/a b.tar.xz"], "dir/a b.tar.xz"),
                (["amk", "list", "-l"], nil), (["amk", "list", "--json"], nil), (["amk", "list", "--"], nil),
                (["amk", "list", "help"], nil),
                (["amk", "list", "a.tar.xz", "-l"], nil), (["amk", "list", "a.tar.xz", "b.tar.xz"], nil), (["amk", "list"], nil),
                (["amk", "info", "a.tar.xz"], nil), (["amk", "a.tar.xz", "list"], nil)
            ] as [([String], String?)])
        func onlyTheListCommandWithOneArchiveIsPlain(arguments: [String], archive: String?) {
            #expect(ListCommand.plainArchive(in: arguments) == archive)
        }

        /// Whatever the direct path takes, ArgumentParser would parse to the same plain listing.
        @Test(arguments: ["a.tar.xz", "-", "dir/a b.tar.xz", "üñí.tar.xz"])
        func theDirectPathTakesWhatParsingWould(archive: String) throws {
            let parsed = try #require(try AMK.parseAsRoot(["list", archive]) as? ListCommand)
            #expect(ListCommand.plainArchive(in: ["amk", "list", archive]) == parsed.archive)
            #expect(!parsed.long && !parsed.verbose && !parsed.json)
        }
    }
}
