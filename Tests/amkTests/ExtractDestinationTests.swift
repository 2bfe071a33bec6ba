import Foundation
import Testing

extension AMKTests {
    /// `extract -C DIR`: the directory and its missing parents are created, like `mkdir -p`, but
    /// only for an archive that can be read; what was created is removed again if nothing could
    /// be extracted into it.
    @Suite @MainActor struct ExtractDestination {
        let tree: TestTree
        let archive: String

        init() throws {
            tree = try TestTree()
            try tree.write("src/t/a.txt", "a\n")
            try tree.write("src/t/sub/b.txt", "b\n")
            archive = tree.path("t.tar.xz")
            let pack = try AMKProcess.run(["pack", tree.path("src/t"), "-o", archive])
            try #require(pack.status == 0, "\(pack.stderr)")
        }

        @Test func missingParentsAreCreated() throws {
            let result = try AMKProcess.run(["extract", archive, "-C", tree.path("new/deeper/dir")])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(try tree.read("new/deeper/dir/t/sub/b.txt") == Array("b\n".utf8))
        }

        @Test func relativeDestinationWithParents() throws {
            let result = try AMKProcess.run(["extract", archive, "-C", "rel/out"], in: tree.root)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(try tree.read("rel/out/t/a.txt") == Array("a\n".utf8))
        }

        @Test func nothingIsCreatedForAMissingArchive() throws {
            let result = try AMKProcess.run(["extract", tree.path("none.tar.xz"), "-C", tree.path("fresh/sub")])
            #expect(result.status == 1)
            #expect(result.stderr.contains("none.tar.xz"), "\(result.stderr)")
            #expect(!tree.exists("fresh"))
        }

        /// A file that is not xz opens (it is read sequentially) and fails at its first bytes.
        @Test(arguments: ["fresh", "fresh/sub"])
        func nothingIsLeftForAnUnreadableArchive(destination: String) throws {
            try tree.write("plain.txt", "this is plainly not an xz file\n")
            let result = try AMKProcess.run(["extract", tree.path("plain.txt"), "-C", tree.path(destination)])
            #expect(result.status == 1)
            #expect(!tree.exists("fresh"), "left the destination it created")
        }

        @Test func nothingIsCreatedForAMissingMember() throws {
            let result = try AMKProcess.run(["extract", archive, "t/none", "-C", tree.path("fresh")])
            #expect(result.status == 1)
            #expect(result.stderr.contains("member 't/none'"), "\(result.stderr)")
            #expect(!tree.exists("fresh"))
        }

        /// A destination that already existed is the user's: a failure does not remove it.
        @Test func anExistingDestinationStays() throws {
            try tree.mkdir("mine")
            try tree.write("plain.txt", "this is plainly not an xz file\n")
            let result = try AMKProcess.run(["extract", tree.path("plain.txt"), "-C", tree.path("mine")])
            #expect(result.status == 1)
            #expect(tree.exists("mine"))
        }

        @Test func aFileInTheWayIsAnError() throws {
            try tree.write("blocker", "file\n")
            let result = try AMKProcess.run(["extract", archive, "-C", tree.path("blocker/dir")])
            #expect(result.status == 1)
            #expect(result.stderr.contains("blocker"), "\(result.stderr)")
            #expect(result.stderr.contains("Not a directory"), "\(result.stderr)")
        }
    }
}
