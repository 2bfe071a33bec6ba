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

        /// A failed import whose status cannot be written (not a byte can be: `ulimit -f 0`, as
        /// on a full disk) leaves no status, not the previous import's "success", which the app
        /// read after this import had failed.
        @Test func aFailureThatCannotBeRecordedLeavesNoStaleSuccess() throws {
            let tree = try TestTree()
            try tree.write("src/Documents/a.txt", "a\n")
            let exported = try AMKProcess.run(["export", "--container", tree.path("src"), "-o", tree.path("e.tar.xz"), "--preset", "0"])
            #expect(exported.status == 0, "\(exported.stderr)")
            let first = try AMKProcess.run(["import", tree.path("e.tar.xz"), "--container", tree.path("dst")])
            #expect(first.status == 0, "\(first.stderr)")
            #expect(TransferProcess.recordedOutcome(in: tree.path("dst")) == "success")
            let second = try ShellPipeline.run("trap '' XFSZ; ulimit -f 0; \"$AMK\" import e.tar.xz --container dst", in: tree.root)
            #expect(second.status == 1, "\(second.stderr)")
            #expect(!FileManager.default.fileExists(atPath: tree.path("dst/.amk/import-status.json")), "a stale status stayed")
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
                ["import", archive, "--container", tree.path("dst"), "--extension", linked.extensionName, "--adopt-container"])
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
                ["import", archive, "--container", tree.path("dst"), "--extension", "sample", "--adopt-container"])
            #expect(result.status == 0, "\(result.stderr)")
            let items = TransferProcess.items(under: tree.path("dst/Documents"))
            #expect(items["latest"] == Data("-> notes/a.txt".utf8))
            #expect(items["notes/a.txt"] == Data("hello\n".utf8))
            // The received link replaces the folder of the same name; nothing is merged through it.
            #expect(items["notes-folder"] == Data("-> notes".utf8))
            #expect(TransferProcess.recordedOutcome(in: tree.path("dst")) == "success")
        }

        /// A folder that holds data but was never marked as a container is refused before
        /// anything runs (a failed import clears the container): `amk import` and `amk receive`
        /// once marked whatever folder they were given, and a failing import then emptied it.
        /// `--adopt-container` marks it on purpose.
        @Test func anUnmarkedFolderWithDataIsRefusedUnlessAdopted() throws {
            let tree = try TestTree()
            try tree.write("src/Documents/note.txt", "note\n")
            let exported = try AMKProcess.run(["export", "--container", tree.path("src"), "-o", tree.path("e.tar.xz"), "--preset", "0"])
            #expect(exported.status == 0, "\(exported.stderr)")
            try tree.write("mine/precious.txt", "precious\n")
            try tree.write("mine/photos/p.jpg", "jpeg\n")
            try tree.write("failing.sh", "#!/bin/sh\nexit 3\n")
            _ = chmod(tree.path("failing.sh"), 0o755)
            let before = TransferProcess.items(under: tree.path("mine"))
            let refused = try AMKProcess.run(
                ["import", tree.path("e.tar.xz"), "--container", tree.path("mine"), "--extension-executable", tree.path("failing.sh")])
            #expect(refused.status == 1, "\(refused.stderr)")
            #expect(
                refused.stderr.contains("not marked as a container") && refused.stderr.contains("--adopt-container"), "\(refused.stderr)")
            #expect(TransferProcess.items(under: tree.path("mine")) == before, "nothing added, nothing removed")
            let receiving = try AMKProcess.run(["receive", "--listen", "127.0.0.1:0", "--container", tree.path("mine")])
            #expect(receiving.status == 1 && !receiving.stdout.contains("pairing code"), "\(receiving.stdout)\(receiving.stderr)")
            #expect(TransferProcess.items(under: tree.path("mine")) == before)
            let adopted = try AMKProcess.run(
                ["import", tree.path("e.tar.xz"), "--container", tree.path("mine"), "--adopt-container"])
            #expect(adopted.status == 0, "\(adopted.stderr)")
            #expect(TransferProcess.files(under: tree.path("mine"))["Documents/note.txt"] == Data("note\n".utf8))
            #expect(TransferProcess.files(under: tree.path("mine"))["precious.txt"] == Data("precious\n".utf8))
        }

        /// The container's `Documents` (or `Library`, above `Application Support`) is a link to a
        /// folder outside: the built-in extensions replace the link with a real folder and write
        /// nothing through it. `files` once took `Documents/` (trailing slash, which `lstat`
        /// follows) for a real folder and wrote the received files outside, and the host created
        /// `Application Support` out there.
        @Test(arguments: [("files", "Documents"), ("sample", "Library"), ("documents", "Documents")])
        func aContainerFolderLinkedOutsideIsReplacedNotWrittenThrough(extensionName: String, linked: String) throws {
            let tree = try TestTree()
            try tree.write("src/Documents/a.txt", "alpha\n")
            try tree.write("src/Library/Application Support/db.sqlite", "rows\n")
            let exported = try AMKProcess.run(
                ["export", "--container", tree.path("src"), "--extension", extensionName, "-o", tree.path("e.tar.xz"), "--preset", "0"])
            #expect(exported.status == 0, "\(exported.stderr)")
            try tree.write("outside/note.txt", "someone else's\n")
            try tree.mkdir("dst/.amk")
            try tree.write("dst/.amk/container", "")
            try tree.symlink("dst/\(linked)", to: tree.path("outside"))
            let outsideBefore = TransferProcess.items(under: tree.path("outside"))
            let imported = try AMKProcess.run(
                ["import", tree.path("e.tar.xz"), "--container", tree.path("dst"), "--extension", extensionName])
            #expect(imported.status == 0, "\(imported.stderr)")
            #expect(TransferProcess.items(under: tree.path("outside")) == outsideBefore, "nothing written outside")
            let received = TransferProcess.files(under: tree.path("dst"))
            #expect(received["Documents/a.txt"] == Data("alpha\n".utf8), "\(received.keys.sorted())")
        }

        /// A `.amk` that is a link is refused: the lock, marker and status would be written where
        /// it leads (the import once wrote them outside, then blamed a race).
        @Test func aLinkedHostFolderIsRefused() throws {
            let tree = try TestTree()
            try tree.write("src/Documents/a.txt", "alpha\n")
            let exported = try AMKProcess.run(["export", "--container", tree.path("src"), "-o", tree.path("e.tar.xz"), "--preset", "0"])
            #expect(exported.status == 0, "\(exported.stderr)")
            try tree.mkdir("outside")
            try tree.write("outside/container", "")
            try tree.mkdir("dst")
            try tree.symlink("dst/.amk", to: tree.path("outside"))
            let result = try AMKProcess.run(["import", tree.path("e.tar.xz"), "--container", tree.path("dst")])
            #expect(result.status == 1, "\(result.stderr)")
            #expect(result.stderr.contains(".amk' is a symbolic link"), "\(result.stderr)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: tree.path("outside")) == ["container"])
        }

        /// The `documents` extension exports a link to a folder as the link it is: it once took
        /// it for a folder whose files come one by one, and the walk never enters a link, so the
        /// link was lost on both sides with exit status 0.
        @Test func theDocumentsExtensionKeepsALinkToAFolder() throws {
            let tree = try TestTree()
            try tree.write("src/Documents/real/a.txt", "alpha\n")
            try tree.symlink("src/Documents/alias", to: "real")
            let exported = try AMKProcess.run(
                ["export", "--container", tree.path("src"), "--extension", "documents", "-o", tree.path("e.tar.xz"), "--preset", "0"])
            #expect(exported.status == 0, "\(exported.stderr)")
            let imported = try AMKProcess.run(
                ["import", tree.path("e.tar.xz"), "--container", tree.path("dst"), "--extension", "documents"])
            #expect(imported.status == 0, "\(imported.stderr)")
            let items = TransferProcess.items(under: tree.path("dst/Documents"))
            #expect(items["alias"] == Data("-> real".utf8), "\(items.keys.sorted())")
            #expect(items["real/a.txt"] == Data("alpha\n".utf8))
        }
    }
}
