import Foundation
import Tar
import TestSupport
import Testing

@testable import IndexedArchive

extension EngineSuites {
    /// A hard link selected without its target: the target's content is written under the link's
    /// name (tar and bsdtar fail there), and further links to it link to that name.
    @Suite struct HardLinkStandInsTests {
        static func entry(_ path: String, _ kind: TarEntryKind, offset: UInt64, link: String? = nil) -> ArchiveEntry {
            ArchiveEntry(
                path: path, kind: kind, size: kind == .regular ? 10 : 0, mode: 0o644, uid: 0, gid: 0,
                mtime: TarTimestamp(seconds: 0, nanoseconds: 0), linkTarget: link, headerOffset: offset, dataOffset: offset + 512,
                checksum: kind == .regular ? 1 : nil, hasPaxHeader: false)
        }

        static let entries = [
            entry("d/", .directory, offset: 0), entry("d/file", .regular, offset: 512),
            entry("d/one", .hardLink, offset: 1536, link: "d/file"), entry("d/two", .hardLink, offset: 2048, link: "d/file"),
            entry("d/sym", .symbolicLink, offset: 2560, link: "file"), entry("d/to-dir", .hardLink, offset: 3072, link: "d"),
            entry("d/file", .regular, offset: 3584), entry("d/three", .hardLink, offset: 4608, link: "d/file")
        ]

        static func standIns(_ selected: Set<String>) -> HardLinkStandIns {
            HardLinkStandIns(entries: entries) { selected.contains($0.path) }
        }

        @Test func theFirstSelectedLinkGetsTheContentAndTheOthersLinkToIt() {
            let s = Self.standIns(["d/one", "d/two"])
            #expect(s.extracts(at: 512, selected: false), "the target is written")
            #expect(!s.extracts(at: 1536, selected: true), "in place of the first link")
            #expect(s.extracts(at: 2048, selected: true))
            var header = TarHeader(path: "d/file", kind: .regular, size: 10)
            s.apply(to: &header, at: 512)
            #expect(header.path == "d/one")
            var link = TarHeader(path: "d/two", kind: .hardLink, linkTarget: "d/file")
            s.apply(to: &link, at: 2048)
            #expect(link.path == "d/two" && link.linkTarget == "d/one")
        }

        @Test func aSelectedTargetOrAnotherKindOfTargetChangesNothing() {
            #expect(Self.standIns(["d/file", "d/one"]).isEmpty)
            #expect(Self.standIns(["d/sym"]).isEmpty, "a symbolic link is not a hard link")
            #expect(Self.standIns(["d/to-dir"]).isEmpty, "a link to a folder is left to fail")
            #expect(!Self.standIns(["d/two"]).extracts(at: 3584, selected: false))
        }

        @Test func aLinkNamesTheLatestMemberOfItsTargetsNameBeforeIt() {
            let s = Self.standIns(["d/one", "d/three"])
            var first = TarHeader(path: "d/file", kind: .regular, size: 10)
            s.apply(to: &first, at: 512)
            var second = TarHeader(path: "d/file", kind: .regular, size: 10)
            s.apply(to: &second, at: 3584)
            #expect(first.path == "d/one" && second.path == "d/three", "each link gets the content it names")
        }

        /// A symbolic link with two names (link(2) does not follow it) was packed as two symbolic
        /// links, and extracted as two inodes; GNU tar and bsdtar store the second name as a hard
        /// link. It is packed so now: extracted whole, one inode; its second name selected alone
        /// (the index knows the target), a symbolic link with the target's text.
        @Test func aSymbolicLinkWithTwoNamesIsStoredOnceAndComesBackOnce() async throws {
            let dir = try TemporaryDirectory()
            let root = dir.path + "/t"
            try createFile(root + "/file", Array("content\n".utf8))
            try #require(symlink("file", root + "/s1") == 0)
            try #require(linkat(AT_FDCWD, root + "/s1", AT_FDCWD, root + "/s2", 0) == 0)
            var before = stat()
            try #require(lstat(root + "/s2", &before) == 0 && before.st_nlink == 2, "this file system cannot link a symbolic link")
            var options = testOptions()
            options.order = .name
            let archive = dir.path + "/t.tar.xz"
            _ = try await ArchivePacker.pack([PackSource(path: root, archivePath: "t")], to: .file(archive), options: options)
            let reader = try await ArchiveReader.open(path: archive)
            let entries = try await reader.entries()
            #expect(entries.first { $0.name == "t/s1" }?.kind == .symbolicLink)
            #expect(entries.first { $0.name == "t/s2" }.map { ($0.kind, $0.linkTarget) } ?? (.regular, nil) == (.hardLink, "t/s1"))

            try await reader.extract(to: dir.path + "/whole")
            var one = stat()
            var two = stat()
            #expect(lstat(dir.path + "/whole/t/s1", &one) == 0 && lstat(dir.path + "/whole/t/s2", &two) == 0)
            #expect(one.st_ino == two.st_ino && one.st_mode & S_IFMT == S_IFLNK, "one symbolic link under two names")

            var selection = ExtractOptions()
            selection.members = ["t/s2"]
            try await ArchiveReader.open(path: archive).extract(to: dir.path + "/alone", options: selection)
            #expect(try FileManager.default.destinationOfSymbolicLink(atPath: dir.path + "/alone/t/s2") == "file")
            #expect(!FileManager.default.fileExists(atPath: dir.path + "/alone/t/s1"))
        }

        /// A tree with one file under three names: packed in name order, `a.txt` is the file and
        /// the others are links to it.
        static func packed(_ dir: TemporaryDirectory, big: Bool = false) async throws -> String {
            let root = dir.path + "/t"
            try createFile(root + "/a.txt", Array("the content\n".utf8))
            #expect(link(root + "/a.txt", root + "/b.txt") == 0 && link(root + "/a.txt", root + "/c.txt") == 0)
            if big { try createFile(root + "/big.bin", sampleBytes(count: 200_000, seed: 3, text: true)) }
            var options = testOptions()
            options.order = .name
            let archive = dir.path + "/t.tar.xz"
            _ = try await ArchivePacker.pack([PackSource(path: root, archivePath: "t")], to: .file(archive), options: options)
            let names = try await ArchiveReader.open(path: archive).entries().filter { $0.kind == .hardLink }.map(\.name)
            #expect(names == ["t/b.txt", "t/c.txt"])
            return archive
        }

        /// By random access (a small selection), through the whole stream (a large one), and with
        /// a reader opened for the selection, whose index leaves the target out.
        @Test(arguments: [false, true], [false, true])
        func linksExtractedWithoutTheirTargetHoldItsContent(big: Bool, openedForSelection: Bool) async throws {
            let dir = try TemporaryDirectory()
            let archive = try await Self.packed(dir, big: big)
            let members: Set<String> = big ? ["t/b.txt", "t/c.txt", "t/big.bin"] : ["t/b.txt", "t/c.txt"]
            let reader =
                openedForSelection
                ? try await ArchiveReader.open(path: archive, selecting: MemberFilter(members))
                : try await ArchiveReader.open(path: archive)
            var options = ExtractOptions()
            options.members = members
            let out = dir.path + "/out"
            let summary = try await reader.extract(to: out, options: options)
            #expect(summary.entries == members.count)
            #expect(!exists(out + "/t/a.txt"), "the target is not written under its own name")
            #expect(try Array(Data(contentsOf: URL(filePath: out + "/t/b.txt"))) == Array("the content\n".utf8))
            var b = stat()
            var c = stat()
            #expect(lstat(out + "/t/b.txt", &b) == 0 && lstat(out + "/t/c.txt", &c) == 0)
            #expect(b.st_ino == c.st_ino && b.st_nlink == 2, "the second link links to the first")
        }

        @Test func readingALinkGivesItsTargetsContent() async throws {
            let dir = try TemporaryDirectory()
            let archive = try await Self.packed(dir)
            #expect(try await ArchiveReader.open(path: archive).contents(of: "t/c.txt") == Array("the content\n".utf8))
            let selected = try await ArchiveReader.open(path: archive, selecting: MemberFilter(["t/c.txt"]))
            #expect(try await selected.contents(of: "t/c.txt") == Array("the content\n".utf8))
        }

        /// The target's content goes under the link's name only through the extractor's checks
        /// of that name: a hostile index cannot use a stand-in to write outside the destination.
        @Test(arguments: ["../escape", "/tmp/amk-stand-in-escape"])
        func aStandInsNameIsHeldToTheSameRules(link: String) async throws {
            let dir = try TemporaryDirectory()
            let tar = try tarStream([tarFile("target", "secret"), tarHardLink(link, to: "target")])
            let reader = try await hostileArchive(tar, mode: .indexed, at: dir.path + "/h.tar.xz")
            var options = ExtractOptions()
            options.members = [link]
            let out = dir.path + "/out"
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: false)
            let error = await expectArchiveError(link) { try await reader.extract(to: out, options: options) }
            #expect(error?.code == .unsafePath, "\(String(describing: error))")
            #expect(!exists(dir.path + "/escape") && !exists("/tmp/amk-stand-in-escape"))
            #expect(try FileManager.default.contentsOfDirectory(atPath: out).isEmpty)
        }

        /// A hard link to `d/f/` names a folder: a full extraction refuses it, as GNU tar and
        /// bsdtar do, and selected alone (or read, as `extract -O` reads it) it was given `d/f`'s
        /// content; now it is refused alike.
        @Test func aLinkToATargetSpeltAsAFolderIsRefusedSelectedOrNot() async throws {
            let dir = try TemporaryDirectory()
            let tar = try tarStream([tarFile("d/f", "secret"), tarHardLink("ln", to: "d/f/")])
            let reader = try await hostileArchive(tar, mode: .indexed, at: dir.path + "/s.tar.xz")
            for selected in [nil, ["ln"]] as [Set<String>?] {
                var options = ExtractOptions()
                options.members = selected
                let out = dir.path + "/out-\(selected == nil ? "all" : "one")"
                let error = await expectArchiveError("ln") { try await reader.extract(to: out, options: options) }
                #expect(error?.code == .unsafePath && error?.message.contains("names a folder") == true, "\(String(describing: error))")
                #expect(!exists(out + "/ln"))
            }
            let read = await expectArchiveError("read") { try await reader.contents(of: "ln") }
            #expect(read?.code == .unsafePath && read?.message.contains("names a folder") == true, "\(String(describing: read))")
        }

        /// Without our index (xz's own archive of the same tar stream) the link fails as in tar,
        /// and the message says why.
        @Test(.enabled(if: toolExists("xz")))
        func withoutTheIndexTheLinkFailsSayingItsTargetWasNotExtracted() async throws {
            let dir = try TemporaryDirectory()
            let archive = try await Self.packed(dir)
            let foreign = dir.path + "/foreign.tar.xz"
            let result = try await runShell("xz -dc '\(archive)' | xz -0 -c > '\(foreign)'")
            #expect(result.status == 0)
            var options = ExtractOptions()
            options.members = ["t/b.txt"]
            let error = await expectArchiveError("the link alone") {
                try await ArchiveReader.open(path: foreign).extract(to: dir.path + "/out", options: options)
            }
            #expect(error?.member == "t/b.txt")
            #expect(error?.message.contains("hard link to 't/a.txt', which has not been extracted") == true, "\(String(describing: error))")
        }

        /// A link stored before its target fails a full extraction as in tar, and the message no
        /// longer advises extracting the whole archive, which is what was done.
        @Test(.enabled(if: toolExists("xz")))
        func aLinkBeforeItsTargetInAFullExtractionSaysTheArchiveLacksIt() async throws {
            let dir = try TemporaryDirectory()
            let tar = try tarStream([tarHardLink("l/hl", to: "l/f"), tarFile("l/f", "content")])
            let reader = try await hostileArchive(tar, mode: .sequential, at: dir.path + "/early.tar.xz")
            let error = await expectArchiveError("the link first") { try await reader.extract(to: dir.path + "/out") }
            #expect(error?.member == "l/hl")
            #expect(
                error?.message == "hard link to 'l/f', which has not been extracted: the archive holds no such member before the link",
                "\(String(describing: error))")
        }

        /// The same to a descriptor (`extract -O`): the link stands for its file's content, which
        /// went by unwritten, so the extraction fails saying so; it used to write nothing and
        /// succeed. With the file selected too, its content goes out once, as `tar -xO` gives it;
        /// with no selection every file goes out and the links add nothing. From our indexed
        /// archive the link's content comes by random access.
        @Test(.enabled(if: toolExists("xz")))
        func toADescriptorTheLinkFailsOrItsFileGoesOutOnce() async throws {
            let dir = try TemporaryDirectory()
            let archive = try await Self.packed(dir)
            let foreign = dir.path + "/foreign.tar.xz"
            #expect(try await runShell("xz -dc '\(archive)' | xz -0 -c > '\(foreign)'").status == 0)
            func content(of path: String, _ members: Set<String>?) async throws -> [UInt8] {
                let output = dir.path + "/out-\(UUID().uuidString)"
                let fd = open(output, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
                try #require(fd >= 0)
                defer { close(fd) }
                var options = ExtractOptions()
                options.contentOutput = fd
                if let members { options.members = members }
                _ = try await ArchiveReader.open(path: path).extract(to: dir.path + "/unused", options: options)
                return try await readBytes(output)
            }
            let error = await expectArchiveError("the link alone") { try await content(of: foreign, ["t/b.txt"]) }
            #expect(error?.member == "t/b.txt")
            #expect(
                error?.message.contains("hard link to 't/a.txt', whose content came earlier in the stream and was not extracted") == true,
                "\(String(describing: error))")
            let text = Array("the content\n".utf8)
            #expect(try await content(of: foreign, ["t/a.txt", "t/b.txt"]) == text)
            #expect(try await content(of: foreign, ["t"]) == text)
            #expect(try await content(of: foreign, nil) == text)
            #expect(try await content(of: archive, ["t/b.txt"]) == text)
            #expect(!exists(dir.path + "/unused"))
        }
    }
}
