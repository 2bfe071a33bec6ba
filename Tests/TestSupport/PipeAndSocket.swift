import Foundation

/// A pipe, `[read end, write end]`, whose ends are closed on exec: a process that another test
/// spawns meanwhile must not keep an end open (a reader would then never see the end of file).
package func pipeClosedOnExec() throws -> [Int32] {
    var fds: [Int32] = [0, 0]
    guard pipe(&fds) == 0 else { throw CocoaError(.fileWriteUnknown) }
    for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    return fds
}

/// Writes `bytes` into a pipe from a thread of its own and closes it, while `body` reads the
/// other end.
@discardableResult
package func feed<T: Sendable>(_ bytes: [UInt8], _ body: (Int32) async throws -> T) async throws -> T {
    let ends = try pipeClosedOnExec()
    let (readEnd, writeEnd) = (ends[0], ends[1])
    defer { close(readEnd) }
    let writer = Thread {
        var blocked = sigset_t()
        sigemptyset(&blocked)
        sigaddset(&blocked, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &blocked, nil)
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = write(writeEnd, raw.baseAddress! + offset, raw.count - offset)
                if n <= 0 { break }
                offset += n
            }
        }
        close(writeEnd)
    }
    writer.start()
    return try await body(readEnd)
}

/// Sends everything on the socket `fd` (no SIGPIPE); false if the peer went away.
@discardableResult
package func sendAll(_ fd: Int32, _ bytes: some Collection<UInt8>) -> Bool {
    let bytes = Array(bytes)
    var done = 0
    while done < bytes.count {
        let sent = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + done, $0.count - done, Int32(MSG_NOSIGNAL)) }
        if sent <= 0 { return false }
        done += sent
    }
    return true
}
