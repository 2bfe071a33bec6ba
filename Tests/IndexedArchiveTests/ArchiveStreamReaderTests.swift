import Foundation
import Tar
import TestSupport
import Testing

@testable import IndexedArchive

@Suite(.background) struct ArchiveStreamReaderTests {
    /// A read of the pipe gives the bytes waiting in it, no more (its buffer is not zeroed
    /// first, so nothing but what `read` wrote may show), then nothing at its end; a failed read
    /// names the descriptor and its errno.
    @Test func aReadGivesWhatThePipeHoldsAndNoMore() throws {
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        defer { close(fds[0]) }
        let sent: [UInt8] = [1, 2, 3, 0, 255]
        #expect(write(fds[1], sent, sent.count) == sent.count)
        #expect(try ArchiveStreamReader.readSome(fds[0], max: 1 << 20) == sent)
        #expect(write(fds[1], [42], 1) == 1)
        close(fds[1])
        #expect(try ArchiveStreamReader.readSome(fds[0], max: 1 << 20) == [42])
        #expect(try ArchiveStreamReader.readSome(fds[0], max: 1 << 20).isEmpty)
        do {
            _ = try ArchiveStreamReader.readSome(-1, max: 16)
            Issue.record("a read of descriptor -1 did not fail")
        } catch let error as ArchiveError {
            #expect(error.code == .io(errno: EBADF))
            #expect(error.path == "file descriptor -1")
        }
    }

    /// A stream's default limit is the destination's free space, and against it counts what the
    /// extraction adds to the disk: a stream re-extracted over the tree it made replaces each file
    /// with one of the same size, and was refused once its content passed the free space left
    /// (`tar -x` and `amk extract FILE` went through). Into an empty folder the limit holds.
    @Test(.enabled(if: getuid() == 0, "mounts a tmpfs"))
    func aStreamReplacingFilesCountsOnlyWhatItAdds() async throws {
        let dir = try TemporaryDirectory()
        for i in 0..<5 { try createFile(dir.path + "/src/f\(i)", sampleBytes(count: 1 << 20, seed: UInt64(i), text: false)) }
        var options = PackOptions()
        options.preset = 0
        _ = try await ArchivePacker.pack(
            [PackSource(path: dir.path + "/src", archivePath: "src")], to: .file(dir.path + "/a.tar.xz"), options: options)
        let mountPoint = dir.path + "/small"
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: false)
        let mount = try await runTool(["/bin/mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", mountPoint])
        try #require(mount.status == 0, "tmpfs not available: \(mount.stderr)")
        defer { _ = umount2(mountPoint, 0) }
        func extract(into folder: String) async throws -> ArchiveStreamReader.Result {
            let fd = open(dir.path + "/a.tar.xz", O_RDONLY)
            defer { close(fd) }
            return try await ArchiveStreamReader.extract(from: fd, to: folder)
        }
        #expect(try await extract(into: mountPoint + "/out").extracted == 6)
        var space = statvfs()
        #expect(statvfs(mountPoint, &space) == 0)
        #expect(UInt64(space.f_bavail) * UInt64(space.f_frsize) < 4 << 20, "the premise: less free than the tree")
        // Again, over the same tree: every file is replaced, and nothing is refused.
        #expect(try await extract(into: mountPoint + "/out").extracted == 6)
        #expect(try await filesThatDifferFromSource(mountPoint + "/out/src", source: dir.path + "/src").isEmpty)
        // Into a new folder, the same content is more than the disk has: refused, by the limit.
        let error = await #expect(throws: ArchiveError.self) { _ = try await extract(into: mountPoint + "/new") }
        #expect(error?.code == .limitExceeded, "\(String(describing: error))")
        #expect(error?.message.contains("the free space at the destination") == true, "\(String(describing: error))")
        // Free space is no limit to raise: the advice is to make room, not --max-bytes.
        #expect(error?.message.contains("make room there, or extract into a folder with more") == true, "\(String(describing: error))")
        #expect(error?.message.contains("--max-bytes") == false, "\(String(describing: error))")
    }

    /// A file replaced while another name still links to it gives nothing back: a stream
    /// alternating a file and hard links to it got the file's blocks back at every replacement,
    /// and ran the disk full where the limit had refused it.
    @Test(.enabled(if: getuid() == 0, "mounts a tmpfs"))
    func aReplacedFileThatAnotherNameLinksGivesNothingBack() async throws {
        let dir = try TemporaryDirectory()
        let content = sampleBytes(count: 1 << 20, seed: 9, text: false)
        var members: [(TarHeader, [UInt8])] = []
        for round in 0..<12 {
            var file = tarFile("A", "")
            file.0.size = UInt64(content.count)
            file.1 = content
            members += [file, tarHardLink("L\(round)", to: "A")]
        }
        try await writeBytes(dir.path + "/links.tar.xz", try indexedArchive(tar: try tarStream(members)))
        let mountPoint = dir.path + "/small"
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: false)
        let mount = try await runTool(["/bin/mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", mountPoint])
        try #require(mount.status == 0, "tmpfs not available: \(mount.stderr)")
        defer { _ = umount2(mountPoint, 0) }
        let fd = open(dir.path + "/links.tar.xz", O_RDONLY)
        defer { close(fd) }
        let error = await #expect(throws: ArchiveError.self) {
            _ = try await ArchiveStreamReader.extract(from: fd, to: mountPoint + "/out")
        }
        #expect(error?.code == .limitExceeded, "the limit, not a full disk: \(String(describing: error))")
    }

    /// Bytes that follow a tar's end marker and happen to spell the index's magic, followed by
    /// anything but an index's header, are what tar ignores there: a pipe reads such an archive
    /// as a file does (it refused it as a damaged index since the pipe looks for the index behind
    /// whatever follows the marker).
    @Test func bytesSpellingTheMagicBehindOtherBytesAreNotAnIndex() async throws {
        let dir = try TemporaryDirectory()
        let junk = Array("some notes\nAMKINDEX is a word here, and no index follows".utf8)
        let archive = try indexedArchive(
            tar: try tarStream([tarFile("a.txt", "a\n")]) + junk, index: Array("not an index".utf8))
        try await writeBytes(dir.path + "/x.tar.xz", archive)
        let fd = open(dir.path + "/x.tar.xz", O_RDONLY)
        defer { close(fd) }
        let result = try await ArchiveStreamReader.scan(from: fd)
        #expect(result.members == 1 && !result.indexVerified)
    }

    /// Packs `root` into one end of a pipe while the stream reader extracts from the other.
    @Test func packThroughAPipeArrivesIdentical() async throws {
        let dir = try TemporaryDirectory()
        let root = try ArchivePackerTests.makeTree(in: dir)
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let (readEnd, writeEnd) = (fds[0], fds[1])
        defer { close(readEnd) }
        let out = dir.path + "/out"
        async let received = ArchiveStreamReader.extract(from: readEnd, to: out)
        let summary: PackSummary
        do {
            defer { close(writeEnd) }
            summary = try await ArchivePacker.pack(
                [PackSource(path: root, archivePath: "src")], to: .fileDescriptor(writeEnd),
                options: ArchivePackerTests.options())
        }
        let result = try await received
        #expect(result.indexVerified)
        #expect(result.members == summary.entries)
        #expect(result.entries.isEmpty, "an extraction keeps no entry per member")
        #expect(result.metadata["resourcesVersion"] == "3")
        let original = try TreeSnapshot(root)
        let extracted = try TreeSnapshot(out + "/src")
        #expect(original == extracted)
    }

    static func packToBytes(_ root: String, in dir: TemporaryDirectory) async throws -> [UInt8] {
        let archive = dir.path + "/stream.tar.xz"
        try await ArchivePacker.pack(
            [PackSource(path: root, archivePath: "src")], to: .file(archive),
            options: ArchivePackerTests.options())
        return Array(try Data(contentsOf: URL(fileURLWithPath: archive)))
    }

    /// Feeds `bytes` through a pipe from a thread of its own, then closes it.
    static func extract(
        _ bytes: [UInt8], to out: String,
        options: ExtractOptions = ExtractOptions()
    ) async throws -> ArchiveStreamReader.Result {
        try await feed(bytes) { try await ArchiveStreamReader.extract(from: $0, to: out, options: options) }
    }

    /// The nanoseconds a stream restores from the index at its end go to the names members were
    /// written under: with `stripComponents`, the folder written as `x` is the archive's `x/x`,
    /// and gets its time, not the time of the archive's `x` (which was not written at all). A
    /// symbolic link gets its own (it kept whole seconds on a stream, where a file kept them all).
    @Test func aStrippedStreamRestoresNanosecondsUnderTheStrippedNames() async throws {
        let dir = try TemporaryDirectory()
        let root = dir.path + "/x"
        try FileManager.default.createDirectory(atPath: root + "/x", withIntermediateDirectories: true)
        try Data("f".utf8).write(to: URL(fileURLWithPath: root + "/x/f"))
        func setTime(_ path: String, _ seconds: Int, _ nanoseconds: Int) {
            var times = [timespec(tv_sec: seconds, tv_nsec: nanoseconds), timespec(tv_sec: seconds, tv_nsec: nanoseconds)]
            _ = utimensat(AT_FDCWD, path, &times, 0)
        }
        try FileManager.default.createSymbolicLink(atPath: root + "/x/l", withDestinationPath: "f")
        setTime(root + "/x/f", 1_600_000_000, 111)
        var linkTimes = [timespec(tv_sec: 1_600_000_050, tv_nsec: 444), timespec(tv_sec: 1_600_000_050, tv_nsec: 444)]
        _ = utimensat(AT_FDCWD, root + "/x/l", &linkTimes, AT_SYMLINK_NOFOLLOW)
        setTime(root + "/x", 1_600_000_100, 222)
        setTime(root, 1_600_000_200, 333)
        let archive = dir.path + "/a.tar.xz"
        try await ArchivePacker.pack(
            [PackSource(path: root, archivePath: "x")], to: .file(archive),
            options: ArchivePackerTests.options())
        var options = ExtractOptions()
        options.stripComponents = 1
        let out = dir.path + "/out"
        _ = try await Self.extract(Array(try Data(contentsOf: URL(fileURLWithPath: archive))), to: out, options: options)
        func mtime(_ path: String) -> [Int] {
            var info = stat()
            guard lstat(path, &info) == 0 else { return [] }
            return [info.st_mtim.tv_sec, info.st_mtim.tv_nsec]
        }
        #expect(mtime(out + "/x/f") == [1_600_000_000, 111])
        #expect(mtime(out + "/x/l") == [1_600_000_050, 444], "a symbolic link's own time, nanoseconds too")
        #expect(mtime(out + "/x") == [1_600_000_100, 222], "the archive's x/x, written as x")
    }

    @Test func aStreamCutShortFailsAndLeavesNoHalfFile() async throws {
        let dir = try TemporaryDirectory()
        let root = try ArchivePackerTests.makeTree(in: dir)
        let bytes = try await Self.packToBytes(root, in: dir)
        for cut in [bytes.count / 3, bytes.count / 2, bytes.count - 1] {
            let out = dir.path + "/cut-\(cut)"
            let error = await #expect(throws: ArchiveError.self) {
                try await Self.extract(Array(bytes[..<cut]), to: out)
            }
            #expect(error?.code == .corrupt, "cut at \(cut): \(String(describing: error))")
            // Whatever was written is whole: each file present equals its source.
            let got = try TreeSnapshot(out)
            let original = try TreeSnapshot(root)
            for (path, item) in got.items where item.type == "file" {
                let relative = String(path.dropFirst("src/".count))
                #expect(original.items[relative]?.content == item.content, "cut at \(cut): \(path) is partial")
            }
        }
    }

    @Test func aFlippedByteIsCaught() async throws {
        let dir = try TemporaryDirectory()
        let root = try ArchivePackerTests.makeTree(in: dir)
        var bytes = try await Self.packToBytes(root, in: dir)
        bytes[bytes.count / 2] ^= 0x40
        await #expect(throws: ArchiveError.self) {
            try await Self.extract(bytes, to: dir.path + "/flipped")
        }
    }

    /// An index giving a member another mode (set-user-ID) or time than its tar header: a file's
    /// reading refused it, and a stream's took it (`amk verify - < A` said OK while `amk list -l`
    /// showed the index's mode). The stream holds the headers to the index the same way now.
    @Test(arguments: ["mode", "mtime"])
    func anIndexDisagreeingWithAHeadersModeOrTimeIsRefused(field: String) async throws {
        let dir = try TemporaryDirectory()
        let tar = try tarStream([tarDirectory("d"), tarFile("d/a.txt", "hello\n")])
        let bytes = try indexedArchive(tar: tar) { index in
            if field == "mode" { index.entries[1].mode = 0o4755 } else { index.entries[1].mtime = TarTimestamp(seconds: 0) }
        }
        let error = await expectArchiveError("stream") { try await Self.extract(bytes, to: dir.path + "/out") }
        #expect(error?.code == .corrupt, "\(String(describing: error))")
        #expect(error?.member == "d/a.txt" && error?.message.contains("disagrees with the index") == true, "\(String(describing: error))")
        try await writeBytes(dir.path + "/x.tar.xz", bytes)
        let file = await expectArchiveError("file") { try await ArchiveReader(path: dir.path + "/x.tar.xz").verify() }
        #expect(file?.code == .corrupt)
    }

    /// Zero blocks between the end marker and our index (a tar's record padding, which a file's
    /// reading accepts there): a stream passed over the index after them, checked nothing
    /// against it, and said OK to one that gives a member the set-user-ID bit. The index is found
    /// after them, held to the stream as usual, and refused when it lies.
    @Test(arguments: [false, true]) func anIndexAfterZeroBlocksIsStillChecked(lies: Bool) async throws {
        let dir = try TemporaryDirectory()
        let tar = try tarStream([tarDirectory("d"), tarFile("d/a.txt", "hello\n")]) + [UInt8](repeating: 0, count: 1024)
        let bytes = try indexedArchive(tar: tar) { index in
            if lies { index.entries[1].mode = 0o4755 }
        }
        if lies {
            let error = await expectArchiveError("stream") { try await Self.extract(bytes, to: dir.path + "/out") }
            #expect(
                error?.member == "d/a.txt" && error?.message.contains("disagrees with the index") == true, "\(String(describing: error))")
        } else {
            let result = try await Self.extract(bytes, to: dir.path + "/out")
            #expect(result.indexVerified)
            #expect(try await readBytes(dir.path + "/out/d/a.txt") == Array("hello\n".utf8))
        }
    }
}
