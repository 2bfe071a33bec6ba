import Foundation
import IndexedArchive
import Synchronization
import TestSupport
import Testing

/// Opening an archive (``ArchiveReader`` and ``ArchiveSalvager`` open it through `ArchiveFile`).
@Suite struct ArchiveFileTests {
    /// A FIFO with no writer: a plain `open(O_RDONLY)` waits for a writer forever, and no signal
    /// handled by the process ends that wait. The open must fail at once instead.
    ///
    /// What tells the two apart is whether a writer was needed, not how long the refusal took: a
    /// blocked open never ends by itself, while a refusal has come 25 s late on a loaded machine.
    /// The writer comes only after `rescueAfter`, so that an open that blocks fails the test
    /// instead of hanging the run.
    @Test(arguments: ["reader", "salvager"])
    func aFIFOIsRefusedAtOnce(opener: String) async throws {
        let directory = try TemporaryDirectory()
        let fifo = directory.path + "/pipe.tar.xz"
        try #require(mkfifo(fifo, 0o600) == 0)
        let rescue = FIFORescue(path: fifo, after: .seconds(120))
        let error = try await #require(throws: ArchiveError.self) {
            defer { rescue.notNeeded() }
            if opener == "reader" {
                try await offPool { _ = try ArchiveReader(path: fifo) }
            } else {
                _ = try await ArchiveSalvager.salvage(path: fifo, to: directory.path + "/out")
            }
        }
        #expect(!rescue.wasNeeded, "the open waited for a writer")
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

/// A writer that opens a FIFO after a while unless told it is not needed, and remembers whether
/// that open found a reader waiting. (Its state is behind a `Mutex`.)
private final class FIFORescue: Sendable {
    private let state = Mutex<(notNeeded: Bool, rescued: Bool)>((false, false))

    init(path: String, after delay: Duration) {
        Thread { [self] in
            let deadline = ContinuousClock.now + delay
            while ContinuousClock.now < deadline && !state.withLock({ $0.notNeeded }) { usleep(20_000) }
            state.withLock { state in
                guard !state.notNeeded else { return }
                // Non-blocking: fails (ENXIO) when nobody is reading, opens a blocked reader otherwise.
                let fd = open(path, O_WRONLY | O_NONBLOCK)
                if fd >= 0 {
                    close(fd)
                    state.rescued = true
                }
            }
        }.start()
    }

    func notNeeded() { state.withLock { $0.notNeeded = true } }

    var wasNeeded: Bool { state.withLock { $0.rescued } }
}
