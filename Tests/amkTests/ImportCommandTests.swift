import Foundation
import TestSupport
import Testing

extension AMKTests {
    /// `amk import` of archives holding links where the built-in extensions expect folders.
    @MainActor struct ImportCommand {
        /// A folder an extension merges, given in the archive as a link to a folder outside the
        /// container (an archive `tar` makes of a tree holding such a link).
        struct LinkedFolder: Sendable, CustomTestStringConvertible {
            var extensionName: String
            var member: String
            var testDescription: String { "\(extensionName): \(member)" }
        }

        nonisolated static let linkedFolders = [
            LinkedFolder(extensionName: "sample", member: "Documents"),
            LinkedFolder(extensionName: "sample", member: "Application Support"),
            LinkedFolder(extensionName: "documents", member: "documents")
        ]

        /// Makes `tree/outside` with two files, and the archive `tree/linked.tar.xz` holding
        /// `member` as a link to `target` (by default the outside folder's absolute path) and
        /// `others` as ordinary files.
        static func linkedArchive(
            in tree: TestTree, member: String, target: String? = nil,
            others: [String: String] = [:]
        ) throws -> String {
            try tree.write("outside/secret.txt", "private to another app\n")
            try tree.write("outside/nested/deeper.txt", "nested secret\n")
            try tree.mkdir("archived")
            try tree.symlink("archived/\(member)", to: target ?? tree.path("outside"))
            for (path, text) in others { try tree.write("archived/\(path)", text) }
            let names = [member] + Set(others.keys.map { String($0.split(separator: "/")[0]) }).sorted()
            let archive = tree.path("linked.tar.xz")
            let tar = try ChildProcess.run("/usr/bin/tar", ["-cJf", archive, "-C", tree.path("archived")] + names)
            guard tar.status == 0 else { throw CocoaError(.fileWriteUnknown) }
            return archive
        }

        /// Refused by the host's extraction: non-zero exit, the member named on stderr and in
        /// the recorded status, the outside folder and the container as they were.
        @Test(arguments: linkedFolders)
        func aLinkToAnOutsideFolderFailsTheImportAndTouchesNothing(linked: LinkedFolder) throws {
            let tree = try TestTree()
            let archive = try Self.linkedArchive(in: tree, member: linked.member, others: ["Documents/ordinary.txt": "ordinary\n"])
            try tree.write("dst/Documents/keep.txt", "mine\n")
            try tree.mkdir("dst/Library/Application Support")  // the standard folders `amk import` makes
            try tree.mkdir("dst/tmp")
            let outsideBefore = TransferProcess.items(under: tree.path("outside"))
            let before = TransferProcess.items(under: tree.path("dst"))
            let result = try AMKProcess.run(
                ["import", archive, "--container", tree.path("dst"), "--extension", linked.extensionName])
            #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
            #expect(result.stderr.contains("'\(linked.member)'"), "\(result.stderr)")
            #expect(TransferProcess.items(under: tree.path("outside")) == outsideBefore)
            let after = TransferProcess.items(under: tree.path("dst")).filter { !$0.key.hasPrefix(".amk") }
            #expect(after == before, "\(after.keys.sorted())")
            #expect(TransferProcess.recordedOutcome(in: tree.path("dst")) == "failure")
            #expect(TransferProcess.recordedMessage(in: tree.path("dst"))?.contains("'\(linked.member)'") == true)
        }

        /// A link given for a merged folder that stays inside the archive (`Documents ->
        /// Application Support/stash`) passes the host, but the extension does not follow it
        /// either: it refuses the link instead of merging what it points to.
        @Test func aLinkGivenForAFolderIsRefusedByTheExtensionEvenInside() throws {
            let tree = try TestTree()
            let archive = try Self.linkedArchive(
                in: tree, member: "Documents", target: "Application Support/stash",
                others: ["Application Support/stash/x.txt": "x\n"])
            let result = try AMKProcess.run(
                ["import", archive, "--container", tree.path("dst"), "--extension", "sample"])
            #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
            #expect(result.stderr.contains("'Documents'"), "\(result.stderr)")
            #expect(!tree.exists("dst/Documents/x.txt"))
            #expect(TransferProcess.recordedOutcome(in: tree.path("dst")) == "failure")
        }

        /// Links inside a merged folder are data: they arrive as the links they are.
        @Test func linksInsideAFolderImportAsLinks() throws {
            let tree = try TestTree()
            try tree.write("archived/Documents/notes/a.txt", "hello\n")
            try tree.symlink("archived/Documents/latest", to: "notes/a.txt")
            try tree.symlink("archived/Documents/notes-folder", to: "notes")
            try tree.write("dst/Documents/notes-folder/kept.txt", "the app's own folder of that name\n")
            let archive = tree.path("inside.tar.xz")
            _ = try ChildProcess.run("/usr/bin/tar", ["-cJf", archive, "-C", tree.path("archived"), "Documents"])
            let result = try AMKProcess.run(
                ["import", archive, "--container", tree.path("dst"), "--extension", "sample"])
            #expect(result.status == 0, "\(result.stderr)")
            let items = TransferProcess.items(under: tree.path("dst/Documents"))
            #expect(items["latest"] == Data("-> notes/a.txt".utf8))
            #expect(items["notes/a.txt"] == Data("hello\n".utf8))
            // The received link replaces the folder of the same name; nothing is merged through it.
            #expect(items["notes-folder"] == Data("-> notes".utf8))
            #expect(TransferProcess.recordedOutcome(in: tree.path("dst")) == "success")
        }
    }
}
