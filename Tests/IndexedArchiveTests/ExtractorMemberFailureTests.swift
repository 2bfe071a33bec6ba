import Foundation
import Tar
import TestSupport
import Testing

@testable import IndexedArchive

/// `ExtractOptions.continuesAfterMemberFailures`: a member that cannot be written on its own is
/// reported and passed over, as GNU tar and bsdtar pass over it, on every path that extracts
/// (the parallel blocks of a file, one decoder, a stream, a selection by random access), while
/// damage, limits and the default (an import's whole-or-nothing) still end the extraction.
@Suite(.background, .enabled(if: toolExists("xz")))
struct ExtractorMemberFailureTests {
    /// `a.txt`, then one member no extraction may write, then `b.txt`.
    static func tar(around bad: (TarHeader, [UInt8])) throws -> [UInt8] {
        try tarStream([tarFile("a.txt", "alpha\n"), bad, tarFile("b.txt", "beta\n")])
    }

    static var continuing: ExtractOptions {
        var options = ExtractOptions()
        options.continuesAfterMemberFailures = true
        return options
    }

    static let refused: [(TarHeader, [UInt8])] = [
        tarFile("../evil", "outside\n"), tarFile("/tmp/amk-absolute-\(getpid())", "absolute\n"),
        tarSymlink("up", to: "../../outside"), tarFile("a.txt/under-a-file", "x\n")
    ]

    @Test(arguments: ReadMode.allCases, 0..<refused.count)
    func theMembersAroundARefusedOneAreExtracted(mode: ReadMode, which: Int) async throws {
        let dir = try TemporaryDirectory()
        let bad = Self.refused[which]
        let reader = try await hostileArchive(try Self.tar(around: bad), mode: mode, at: dir.path + "/a.tar.xz")
        var options = Self.continuing
        options.confineSymlinks = true
        let summary = try await reader.extract(to: dir.path + "/out", options: options)
        #expect(summary.entries == 2)
        #expect(summary.failedMembers == 1)
        #expect(summary.failures.map(\.member) == [bad.0.path])
        #expect(summary.failures.first?.code == .unsafePath, "\(summary.failures)")
        #expect(try String(contentsOfFile: dir.path + "/out/a.txt", encoding: .utf8) == "alpha\n")
        #expect(try String(contentsOfFile: dir.path + "/out/b.txt", encoding: .utf8) == "beta\n")
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/evil"))
        #expect(!FileManager.default.fileExists(atPath: "/tmp/amk-absolute-\(getpid())"))
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: dir.path + "/out/up")) == nil)
    }

    /// By default (an import's rule) the first failing member ends the extraction, and what
    /// follows it is not written.
    @Test(arguments: ReadMode.allCases)
    func byDefaultTheFirstFailureEndsTheExtraction(mode: ReadMode) async throws {
        let dir = try TemporaryDirectory()
        let reader = try await hostileArchive(try Self.tar(around: Self.refused[0]), mode: mode, at: dir.path + "/a.tar.xz")
        let error = await expectArchiveError("a '..' member") { try await reader.extract(to: dir.path + "/out") }
        #expect(error?.code == .unsafePath && error?.member == "../evil", "\(String(describing: error))")
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/out/b.txt"))
    }

    /// A stream goes on the same way.
    @Test func aStreamGoesOnPastARefusedMember() async throws {
        let dir = try TemporaryDirectory()
        let bytes = try await xzTool(try Self.tar(around: Self.refused[0]))
        let result = try await ArchiveStreamReaderTests.extract(bytes, to: dir.path + "/out", options: Self.continuing)
        #expect(result.extracted == 2 && result.failedMembers == 1)
        #expect(result.failures.map(\.member) == ["../evil"])
        #expect(FileManager.default.fileExists(atPath: dir.path + "/out/b.txt"))
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/evil"))
    }

    /// Damage is not one member's failure: a checksum that does not match still ends it.
    @Test func damageStillEndsTheExtraction() async throws {
        let dir = try TemporaryDirectory()
        let tar = try tarStream([tarFile("a.txt", "alpha\n"), tarFile("b.txt", "beta\n"), tarFile("c.txt", "gamma\n")])
        // The index describes other content for b.txt, of the same size: its CRC64 disagrees.
        let described = try tarStream([tarFile("a.txt", "alpha\n"), tarFile("b.txt", "BETA\n"), tarFile("c.txt", "gamma\n")])
        try await writeBytes(dir.path + "/a.tar.xz", try indexedArchive(tar: tar, describing: described))
        let reader = try ArchiveReader(path: dir.path + "/a.tar.xz")
        let error = await expectArchiveError("damaged content") {
            try await reader.extract(to: dir.path + "/out", options: Self.continuing)
        }
        #expect(error?.code == .checksumMismatch && error?.member == "b.txt", "\(String(describing: error))")
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/out/c.txt"))
    }

    /// A limit is not one member's failure either: past `maxBytes` nothing more is written.
    @Test func aLimitStillEndsTheExtraction() async throws {
        let dir = try TemporaryDirectory()
        let tar = try tarStream([
            tarFile("a.txt", String(repeating: "a", count: 5000)), tarFile("b.txt", "beta\n")
        ])
        let reader = try await hostileArchive(tar, mode: .sequential, at: dir.path + "/a.tar.xz")
        var options = Self.continuing
        options.maxBytes = 1000
        let error = await expectArchiveError("over the limit") { try await reader.extract(to: dir.path + "/out", options: options) }
        #expect(error?.code == .limitExceeded)
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/out/b.txt"))
    }

    /// A file kept by `--keep-old-files` is one member's failure; from a stream, the nanoseconds
    /// that the index restores at the end are set by name, and must not reach the file kept,
    /// which the extraction did not write.
    @Test func aKeptFileIsPassedOverAndKeepsItsTimeFromAStream() async throws {
        let dir = try TemporaryDirectory()
        let root = dir.path + "/root"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        for name in ["a.txt", "b.txt", "c.txt"] {
            try Data("\(name)\n".utf8).write(to: URL(fileURLWithPath: root + "/" + name))
            var times = [timespec(tv_sec: 1_600_000_000, tv_nsec: 123_456_789), timespec(tv_sec: 1_600_000_000, tv_nsec: 123_456_789)]
            #expect(utimensat(AT_FDCWD, root + "/" + name, &times, 0) == 0)
        }
        let bytes = try await ArchiveStreamReaderTests.packToBytes(root, in: dir)
        let out = dir.path + "/out"
        try FileManager.default.createDirectory(atPath: out + "/src", withIntermediateDirectories: true)
        try Data("mine\n".utf8).write(to: URL(fileURLWithPath: out + "/src/b.txt"))
        var mine = [timespec(tv_sec: 1_000_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000_000, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, out + "/src/b.txt", &mine, 0) == 0)

        var options = Self.continuing
        options.existingFiles = .keep
        let result = try await ArchiveStreamReaderTests.extract(bytes, to: out, options: options)
        #expect(result.indexVerified)
        #expect(result.failures.map(\.member) == ["src/b.txt"])
        #expect(result.failures.first?.code == .io(errno: EEXIST))
        #expect(try String(contentsOfFile: out + "/src/b.txt", encoding: .utf8) == "mine\n")
        #expect(try String(contentsOfFile: out + "/src/c.txt", encoding: .utf8) == "c.txt\n")
        var kept = stat()
        var written = stat()
        #expect(stat(out + "/src/b.txt", &kept) == 0 && stat(out + "/src/c.txt", &written) == 0)
        #expect(kept.st_mtim.tv_sec == 1_000_000_000 && kept.st_mtim.tv_nsec == 0, "the kept file's time was changed")
        #expect(written.st_mtim.tv_sec == 1_600_000_000 && written.st_mtim.tv_nsec == 123_456_789)
    }

    /// A selection read by random access passes over a kept file too, and writes the rest.
    @Test func aSelectionPassesOverAKeptFile() async throws {
        let dir = try TemporaryDirectory()
        let big = String(repeating: "0123456789abcdef", count: 64 << 10)
        let tar = try tarStream([tarFile("big.txt", big), tarFile("a.txt", "alpha\n"), tarFile("b.txt", "beta\n")])
        try await writeBytes(dir.path + "/a.tar.xz", try indexedArchive(tar: tar))
        let out = dir.path + "/out"
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        try Data("mine\n".utf8).write(to: URL(fileURLWithPath: out + "/a.txt"))
        var options = Self.continuing
        options.existingFiles = .keep
        options.selection = MemberSelection(["a.txt", "b.txt"])
        let reader = try await ArchiveReader.open(path: dir.path + "/a.tar.xz", selecting: try #require(options.memberFilter))
        let summary = try await reader.extract(to: out, options: options)
        #expect(summary.entries == 1 && summary.failures.map(\.member) == ["a.txt"])
        #expect(try String(contentsOfFile: out + "/a.txt", encoding: .utf8) == "mine\n")
        #expect(try String(contentsOfFile: out + "/b.txt", encoding: .utf8) == "beta\n")
        #expect(!FileManager.default.fileExists(atPath: out + "/big.txt"))
    }

    /// However many members fail, the summary keeps a bounded number of messages and counts
    /// the rest.
    @Test func theFailuresKeptAreBounded() async throws {
        let dir = try TemporaryDirectory()
        let count = ExtractSummary.keptFailures + 5
        let tar = try tarStream((0..<count).map { tarFile("../evil\($0)", "") } + [tarFile("ok.txt", "ok\n")])
        let reader = try await hostileArchive(tar, mode: .sequential, at: dir.path + "/a.tar.xz")
        let summary = try await reader.extract(to: dir.path + "/out", options: Self.continuing)
        #expect(summary.failures.count == ExtractSummary.keptFailures)
        #expect(summary.failedMembers == count)
        #expect(summary.entries == 1)
    }
}
