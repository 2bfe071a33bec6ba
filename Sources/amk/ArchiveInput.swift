import ArgumentParser
import Foundation
import IndexedArchive
import Synchronization
import XZ

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where `list`, `extract`, `verify` and `info` read an archive from.
///
/// `-` is standard input, as for tar. A regular file (`amk list - < a.tar.xz`, or a path) is read
/// with random access; anything that cannot seek (a pipe, `/dev/stdin` on a pipe, a FIFO, `<(…)`)
/// is read as a stream, in one pass.
enum ArchiveInput {
    /// A regular file, opened by path.
    case file(String)
    /// A descriptor read once to its end; `name` is what messages call it.
    case stream(fd: Int32, name: String)

    /// What the command line named; `-` is standard input. Call it inside
    /// ``SignalCancellation/run(_:)``: opening a FIFO waits for its writer, for as long as it takes
    /// (as tar does), and only cancellation ends that wait.
    static func resolve(_ argument: String) async throws -> ArchiveInput {
        if argument == "-" {
            // As GNU tar: an archive typed at a terminal is never what was meant.
            if isatty(STDIN_FILENO) != 0 {
                StandardError.line("amk: refusing to read an archive from a terminal (-); redirect standard input")
                throw ExitCode(AMK.usageStatus)
            }
            var info = stat()
            if fstat(STDIN_FILENO, &info) == 0, info.st_mode & S_IFMT == S_IFREG {
                // Reopened by path, the file is read from its start with random access.
                return .file("/dev/stdin")
            }
            return .stream(fd: STDIN_FILENO, name: "-")
        }
        var info = stat()
        if stat(argument, &info) == 0 {
            let type = info.st_mode & S_IFMT
            if type == S_IFIFO || type == S_IFCHR || type == S_IFSOCK {
                return .stream(fd: try await openWaiting(argument), name: argument)
            }
        }
        return .file(argument)
    }

    /// Opens `path` for reading, on the calling thread: a regular file at once, a FIFO once a
    /// writer opens it (``openWaiting(_:)`` waits so on a thread of its own).
    static func openForReading(_ path: String) throws -> Int32 {
        var fd: Int32
        repeat { fd = open(path, O_RDONLY | O_CLOEXEC) } while fd < 0 && errno == EINTR
        guard fd >= 0 else {
            let code = errno
            throw ArchiveError(.io(errno: code), "open failed: \(String(cString: strerror(code)))", path: path)
        }
        return fd
    }

    /// Opens `path` for reading on a thread of its own. `open(2)` of a FIFO blocks until a writer
    /// opens it, in a call that no signal interrupts (the handlers restart it): when the task is
    /// cancelled, the wait is abandoned, and the thread closes what it opens later.
    private static func openWaiting(_ path: String) async throws -> Int32 {
        try await abandonable({ _ in try openForReading(path) }, discard: { fd in close(fd) })
    }

    /// Runs `body` on a thread of its own, for a blocking call that no signal interrupts (the
    /// handlers restart it). When the task is cancelled, the wait for the thread is abandoned at
    /// once: `abandoned()` then says so to `body`, which stops at its next step, and what it
    /// returns after all is given to `discard`.
    private static func abandonable<T: Sendable>(
        _ body: @escaping @Sendable (_ abandoned: @Sendable () -> Bool) throws -> T,
        discard: @escaping @Sendable (T) -> Void
    ) async throws -> T {
        let pending = Mutex<CheckedContinuation<T, any Error>?>(nil)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                pending.withLock { $0 = continuation }
                if Task.isCancelled, let waiting = pending.withLock({ $0.take() }) {
                    waiting.resume(throwing: CancellationError())
                    return
                }
                Thread.detachNewThread {
                    let result = Result { try body { pending.withLock { $0 == nil } } }
                    guard let waiting = pending.withLock({ $0.take() }) else {
                        // Abandoned: nobody will use it.
                        if case .success(let value) = result { discard(value) }
                        return
                    }
                    waiting.resume(with: result)
                }
            }
        } onCancel: {
            pending.withLock { $0.take() }?.resume(throwing: CancellationError())
        }
    }

    /// Copies a stream to a temporary file, for `info`, which needs the end of the archive (its
    /// xz Index) before the start. The file is unlinked as soon as it is created, so that nothing
    /// is left behind however the process ends (an interrupted copy of an endless pipe included);
    /// it is read back through its descriptor (`/dev/fd/N`), which the caller closes. The copy
    /// runs on a thread of its own, not the cooperative pool.
    static func spool(_ fd: Int32) async throws -> (fd: Int32, path: String) {
        // A pipe whose writer stalls without closing blocks the copy's `read` for good: Ctrl-C
        // abandons it (and the copy stops at its next read) instead of waiting for the deadline.
        try await abandonable({ abandoned in try copyToTemporary(fd, until: abandoned) }, discard: { copy in close(copy.fd) })
    }

    private static func copyToTemporary(_ fd: Int32, until abandoned: () -> Bool) throws -> (fd: Int32, path: String) {
        var template = Array((NSTemporaryDirectory() + "/amk-stdin-XXXXXX").utf8CString)
        let out = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard out >= 0 else { throw ArchiveError(.io(errno: errno), "cannot create a temporary file for standard input") }
        unlink(String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        // The first bytes are checked before the rest is copied: `cat /dev/zero | amk info -`
        // filled the temporary folder's disk before the input was found not to be xz.
        var head: [UInt8] = []
        let magic = StreamDecoder.headerMagic
        do {
            while true {
                if abandoned() { throw CancellationError() }
                let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
                if count < 0 {
                    if errno == EINTR { continue }
                    throw ArchiveError(.io(errno: errno), "read failed: \(String(cString: strerror(errno)))", path: "-")
                }
                if head.count < magic.count {
                    head += buffer.prefix(min(count, magic.count - head.count))
                    if !magic.starts(with: head) || (count == 0 && head.count < magic.count) {
                        throw ArchiveError(
                            .notAnArchive, "not an xz file: the magic bytes FD 37 7A 58 5A 00 are missing", path: "-", offset: 0)
                    }
                }
                if count == 0 { break }
                var offset = 0
                while offset < count {
                    let written = buffer.withUnsafeBytes { write(out, $0.baseAddress! + offset, count - offset) }
                    if written < 0 {
                        if errno == EINTR { continue }
                        throw ArchiveError(
                            .io(errno: errno),
                            "cannot write the temporary copy of standard input in \(NSTemporaryDirectory()) (TMPDIR): "
                                + String(cString: strerror(errno)))
                    }
                    offset += written
                }
            }
        } catch {
            close(out)
            throw error
        }
        return (out, "/dev/fd/\(out)")
    }
}
