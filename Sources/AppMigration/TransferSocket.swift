import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The few socket calls the transfer makes itself, outside the engine.
///
/// The bulk of the stream is written and read by the engine on its own threads (where SIGPIPE is
/// blocked). The handshake and the status frame are a few bytes each, so they are done here
/// without a thread: `poll` with no wait, then a short sleep, so a silent peer never blocks a
/// thread of the cooperative pool and cancellation is seen within milliseconds.
enum TransferSocket {
    static func failure(_ operation: String, errno code: Int32 = errno) -> TransferError {
        TransferError(.system(errno: code), "\(operation) failed: \(String(cString: strerror(code)))")
    }

    /// Connects to `endpoint`, giving up after `timeout`.
    static func connect(to endpoint: TransferEndpoint, timeout: Duration) async throws -> Int32 {
        var address = try endpoint.socketAddress()
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw failure("socket") }
        do {
            let flags = fcntl(fd, F_GETFL)
            _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
            let result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            if result != 0 {
                guard errno == EINPROGRESS else { throw failure("connect to \(endpoint)") }
                guard try await waitUntil(fd, events: Int16(POLLOUT), timeout: timeout) else {
                    throw TransferError(.timedOut, "no answer from \(endpoint) within \(timeout)")
                }
                var error: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
                if error != 0 { throw failure("connect to \(endpoint)", errno: error) }
            }
            // The engine reads and writes with blocking calls on its own threads.
            _ = fcntl(fd, F_SETFL, flags & ~O_NONBLOCK)
            return fd
        } catch {
            close(fd)
            throw error
        }
    }

    /// Waits until `fd` has one of `events` (or an error or hang-up), polling without blocking.
    /// - Returns: false if `timeout` passed first.
    static func waitUntil(_ fd: Int32, events: Int16, timeout: Duration?) async throws -> Bool {
        let deadline = timeout.map { ContinuousClock.now + $0 }
        while true {
            var entry = pollfd(fd: fd, events: events, revents: 0)
            let ready = poll(&entry, 1, 0)
            if ready < 0 && errno != EINTR { throw failure("poll") }
            if ready > 0 { return true }
            if let deadline, ContinuousClock.now >= deadline { return false }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Reads exactly `count` bytes.
    /// - Returns: nil if the stream ended before the first byte.
    /// - Throws: `.timedOut`, `.connectionLost` if it ended part-way, `.system`.
    static func read(_ fd: Int32, count: Int, timeout: Duration?, what: String) async throws -> [UInt8]? {
        var bytes: [UInt8] = []
        while bytes.count < count {
            guard try await waitUntil(fd, events: Int16(POLLIN), timeout: timeout) else {
                throw TransferError(.timedOut, "timed out waiting for the \(what)")
            }
            var buffer = [UInt8](repeating: 0, count: count - bytes.count)
            let got = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, Int32(MSG_DONTWAIT)) }
            if got < 0 {
                if errno == EAGAIN || errno == EINTR { continue }
                if errno == ECONNRESET { throw TransferError(.connectionLost, "the connection was reset while reading the \(what)") }
                throw failure("reading the \(what)")
            }
            if got == 0 {
                if bytes.isEmpty { return nil }
                throw TransferError(.connectionLost, "the connection ended in the middle of the \(what)")
            }
            bytes += buffer[..<got]
        }
        return bytes
    }

    /// Writes all of `bytes`; `MSG_NOSIGNAL`, so a vanished peer is an error, not a SIGPIPE.
    static func write(_ fd: Int32, _ bytes: [UInt8], what: String) throws {
        var done = 0
        while done < bytes.count {
            let sent = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + done, $0.count - done, Int32(MSG_NOSIGNAL)) }
            if sent < 0 {
                if errno == EINTR { continue }
                if errno == EPIPE || errno == ECONNRESET {
                    throw TransferError(.connectionLost, "the connection was closed by the peer while sending the \(what)")
                }
                throw failure("sending the \(what)")
            }
            done += sent
        }
    }

    /// Sets how long a blocking read or write may wait for the peer before failing with `EAGAIN`.
    static func setIdleTimeout(_ fd: Int32, _ timeout: Duration) {
        let (seconds, attoseconds) = timeout.components
        var value = timeval(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Reads and discards what the peer still sends, until it closes or `timeout` passes, so that
    /// closing does not reset the connection and destroy the status frame just sent. Waits in
    /// slices of 50 ms and stops early if the task is cancelled.
    static func drain(_ fd: Int32, timeout: Duration) {
        let deadline = ContinuousClock.now + timeout
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while ContinuousClock.now < deadline && !Task.isCancelled {
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&entry, 1, 50)
            if ready == 0 || (ready < 0 && errno == EINTR) { continue }
            if ready < 0 { return }
            let got = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, Int32(MSG_DONTWAIT)) }
            if got == 0 { return }
            if got < 0 && errno != EAGAIN && errno != EINTR { return }
        }
    }
}
