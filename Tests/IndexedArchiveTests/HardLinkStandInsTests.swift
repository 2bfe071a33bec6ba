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
    }
}
