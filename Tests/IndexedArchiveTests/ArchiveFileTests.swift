import Foundation
import IndexedArchive
import TestSupport
import Testing

/// Opening an archive (``ArchiveReader`` and ``ArchiveSalvager`` open it through `ArchiveFile`).
@Suite struct ArchiveFileTests {
    /// A FIFO with no writer: a plain `open(O_RDONLY)` waits for a writer forever, and no signal
    /// handled by the process ends that wait. The open must fail at once instead.
    ///
    /// If the open does block, a writer comes after `unblockAfter` so the test fails by taking
    /// too long rather than hanging the run.
    @Test(arguments: ["reader", "salvager"])
    func aFIFOIsRefusedAtOnce(opener: String) async throws {
        let directory = try TemporaryDirectory()
        let fifo = directory.path + "/pipe.tar.xz"
        try #require(mkfifo(fifo, 0o600) == 0)
        // Far from machine noise both ways: a blocked open waits 30 s; a busy machine may delay
        // the refusal by seconds, never by twenty.
        let unblockAfter = 30.0
        let writer = Thread {
            Thread.sleep(forTimeInterval: unblockAfter)
            // Non-blocking: fails (ENXIO) when nobody is reading, opens a blocked reader otherwise.
            let fd = open(fifo, O_WRONLY | O_NONBLOCK)
            if fd >= 0 { close(fd) }
        }
        writer.start()
        let start = ContinuousClock.now
        let error = try await #require(throws: ArchiveError.self) {
            if opener == "reader" {
                try await offPool { _ = try ArchiveReader(path: fifo) }
            } else {
                _ = try await ArchiveSalvager.salvage(path: fifo, to: directory.path + "/out")
            }
        }
        let elapsed = ContinuousClock.now - start
        #expect(elapsed < .seconds(unblockAfter - 10), "took \(elapsed): the open waited for a writer")
        #expect(error.code == .notAnArchive)
        #expect(error.message == "not a regular file")
        #expect(error.path == fifo)
    }

    @Test func aDirectoryIsRefused() throws {
        let directory = try TemporaryDirectory()
        let error = try #require(throws: ArchiveError.self) { _ = try ArchiveReader(path: directory.path) }
        #expect(error.code == .notAnArchive)
        #expect(error.message == "not a regular file")
    }

    @Test func aMissingFileNamesTheErrno() throws {
        let directory = try TemporaryDirectory()
        let error = try #require(throws: ArchiveError.self) { _ = try ArchiveReader(path: directory.path + "/none.tar.xz") }
        #expect(error.code == .io(errno: ENOENT))
    }
}
