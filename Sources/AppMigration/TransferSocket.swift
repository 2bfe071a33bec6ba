import Foundation
import IndexedArchive

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The few socket calls the transfer makes itself, outside the engine and the relay.
///
/// The handshake, the status frame, the wait for a connection and the final drain are a few bytes
/// each, but the peer decides when they come, and it may never send them. Such a wait is a
/// `poll(2)` with the real deadline, made on a thread of our own (``onThread(_:_:)``): it costs no
/// CPU while it waits, it never holds one of the cooperative pool's few threads, and cancelling
/// the awaiting task wakes it at once through a ``TransferWake`` polled alongside the socket.
///
/// Deadlines cover a whole exchange (all 16 bytes of a hello, a whole status frame), not each
/// `recv`: a peer that sends one byte a second cannot stretch a 30-second wait into a long one.
enum TransferSocket {
    static func failure(_ operation: String, errno code: Int32 = errno) -> TransferError {
        TransferError(.system(errno: code), "\(operation) failed: \(String(cString: strerror(code)))")
    }

    /// What came of reading a fixed number of bytes from a peer: either all of them, or what
    /// arrived before the peer stopped, so that the caller can say what the peer did.
    enum Received: Sendable, Equatable {
        /// All the bytes asked for.
        case complete([UInt8])
        /// The peer closed its side after these bytes.
        case closed([UInt8])
        /// The peer reset the connection after these bytes.
        case reset([UInt8])
        /// The deadline passed with only these bytes.
        case timedOut([UInt8])
    }

    /// Runs `body` on a new thread of its own and returns its result.
    ///
    /// `body` blocks in `poll(2)` (see ``wait(_:for:until:wake:)``); cancelling the calling task
    /// signals the wake-up it polls, and the wait throws `CancellationError` at once. The thread is
    /// never abandoned: the result is awaited, so whatever `body` holds (a socket, a buffer) is
    /// not used after this returns.
    static func onThread<T: Sendable>(
        _ name: String,
        _ body: @escaping @Sendable (TransferWake) throws -> T
    ) async throws -> T {
        let wake = try TransferWake()
        if Task.isCancelled { throw CancellationError() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                let thread = Thread {
                    continuation.resume(with: Result { try body(wake) })
                }
                thread.name = name
                thread.stackSize = 512 << 10
                thread.start()
            }
        } onCancel: {
            wake.signal()
        }
    }

    /// Waits, on the calling thread (one of our own, never the cooperative pool's), until `fd` has
    /// one of `events` (or an error or hang-up), `deadline` passes, or `wake` is signalled.
    ///
    /// - Returns: false if the deadline passed first; nil `deadline` waits for good.
    /// - Throws: `CancellationError` once `wake` is signalled; ``TransferError`` if `poll` fails.
    static func wait(
        _ fd: Int32, for events: Int16, until deadline: ContinuousClock.Instant?,
        wake: TransferWake
    ) throws -> Bool {
        while true {
            var entries = [
                pollfd(fd: fd, events: events, revents: 0),
                pollfd(fd: wake.pollFD, events: Int16(POLLIN), revents: 0)
            ]
            let timeout = deadline.map { milliseconds(until: $0) } ?? -1
            let ready = poll(&entries, 2, timeout)
            if ready < 0 {
                if errno == EINTR { continue }
                throw failure("poll")
            }
            if entries[1].revents != 0 { throw CancellationError() }
            if entries[0].revents != 0 { return true }
            if let deadline, ContinuousClock.now >= deadline { return false }
        }
    }

    /// The `poll(2)` timeout that reaches `deadline`, rounded up so that a wait never ends early.
    static func milliseconds(until deadline: ContinuousClock.Instant) -> Int32 {
        let left = ContinuousClock.now.duration(to: deadline)
        guard left > .zero else { return 0 }
        let (seconds, attoseconds) = left.components
        let milliseconds = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(clamping: milliseconds)
    }

    /// A duration for people: "30 s", "1.5 s", "0.25 s".
    static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let value = Double(seconds) + Double(attoseconds) / 1e18
        if value == value.rounded() { return "\(Int64(value)) s" }
        return "\((value * 1000).rounded() / 1000) s"
    }

    /// Connects to `endpoint`, giving up after `timeout`, trying each address its host resolves to
    /// in the resolver's order (so `localhost` reaches `::1` or `127.0.0.1`, whichever listens).
    /// The socket returned is non-blocking: every later read or write of it either waits in `poll`
    /// or is done by a relay that does.
    static func connect(to endpoint: TransferEndpoint, timeout: Duration) async throws -> Int32 {
        let deadline = ContinuousClock.now + timeout
        return try await onThread("amk-connect") { wake in
            // The lookup may wait for DNS: on this thread, never on the pool.
            let addresses = try endpoint.resolve(passive: false)
            var lastFailure: TransferError?
            for address in addresses {
                let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
                guard fd >= 0 else { throw failure("socket") }
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
                var storage = address.storage
                let result = withUnsafePointer(to: &storage) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Platform.connect(fd, $0, address.length) }
                }
                var error: Int32 = result == 0 ? 0 : errno
                if error == EINPROGRESS {
                    let connected: Bool
                    do {
                        connected = try wait(fd, for: Int16(POLLOUT), until: deadline, wake: wake)
                    } catch {
                        close(fd)
                        throw error
                    }
                    guard connected else {
                        close(fd)
                        throw TransferError(.timedOut, "no answer from \(endpoint) within \(seconds(timeout))")
                    }
                    var length = socklen_t(MemoryLayout<Int32>.size)
                    error = 0
                    getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
                }
                if error == 0 { return fd }
                close(fd)
                lastFailure = failure("connect to \(endpoint)", errno: error)
            }
            throw lastFailure ?? TransferError(.invalidAddress, "'\(endpoint.host)' has no address to connect to")
        }
    }

    /// Reads exactly `count` bytes, all before `deadline` (nil waits for good).
    ///
    /// The outcome says how far the peer got, so that the caller's message can name it ("5 of
    /// the hello's 16 bytes"), rather than an `errno`.
    static func receive(_ fd: Int32, count: Int, until deadline: ContinuousClock.Instant?) async throws -> Received {
        try await onThread("amk-receive") { wake in
            var bytes: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: count)
            while bytes.count < count {
                guard try wait(fd, for: Int16(POLLIN), until: deadline, wake: wake) else { return .timedOut(bytes) }
                let got = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, count - bytes.count, Int32(MSG_DONTWAIT)) }
                if got < 0 {
                    if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { continue }
                    if errno == ECONNRESET { return .reset(bytes) }
                    throw failure("recv")
                }
                if got == 0 { return .closed(bytes) }
                bytes += buffer[..<got]
            }
            return .complete(bytes)
        }
    }

    /// Waits until the peer sends something or closes, without reading it (nil `deadline` waits
    /// for good, until cancelled).
    /// - Returns: false if the deadline passed first.
    static func waitReadable(_ fd: Int32, until deadline: ContinuousClock.Instant? = nil) async throws -> Bool {
        try await onThread("amk-watch") { wake in
            try wait(fd, for: Int16(POLLIN), until: deadline, wake: wake)
        }
    }

    /// Writes all of `bytes` at once, without waiting: `MSG_NOSIGNAL`, so a vanished peer is an
    /// error, not a SIGPIPE, and `MSG_DONTWAIT`, so a peer that reads nothing cannot block us.
    ///
    /// Only for the hello and the status frame: at most a few kilobytes into a send buffer that
    /// holds nothing else, which the kernel takes whole.
    static func write(_ fd: Int32, _ bytes: [UInt8], what: String) throws(TransferError) {
        var done = 0
        while done < bytes.count {
            let sent = bytes.withUnsafeBytes {
                send(fd, $0.baseAddress! + done, $0.count - done, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            }
            if sent < 0 {
                if errno == EINTR { continue }
                if errno == EPIPE || errno == ECONNRESET {
                    throw TransferError(.connectionLost, "the connection was closed by the peer while sending the \(what)")
                }
                if errno == EAGAIN || errno == EWOULDBLOCK {
                    throw TransferError(.timedOut, "the peer reads nothing: the \(what) does not fit in the connection's buffer")
                }
                throw failure("sending the \(what)")
            }
            done += sent
        }
    }

    /// Whether bytes have arrived on `fd` that nobody has read yet (`FIONREAD`): a peer that has
    /// spoken, whether or not its reader has looked.
    static func hasBytesWaiting(_ fd: Int32) -> Bool {
        var waiting: Int32 = 0
        return ioctl(fd, UInt(FIONREAD), &waiting) == 0 && waiting > 0
    }

    /// Reads and discards what the peer still sends, until it closes or `timeout` passes, so that
    /// closing does not reset the connection and destroy the status frame just sent.
    ///
    /// - Throws: `CancellationError` if the calling task is cancelled meanwhile.
    static func drain(_ fd: Int32, timeout: Duration) async throws {
        let deadline = ContinuousClock.now + timeout
        try await onThread("amk-drain") { wake in
            var buffer = [UInt8](repeating: 0, count: 64 << 10)
            while try wait(fd, for: Int16(POLLIN), until: deadline, wake: wake) {
                let got = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, Int32(MSG_DONTWAIT)) }
                if got == 0 { return }
                if got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR { return }
            }
        }
    }

    /// A connected pair of local sockets, both close-on-exec from the start (so a process
    /// started meanwhile cannot hold an end open and keep the other from seeing its end).
    static func socketPair() throws(TransferError) -> (Int32, Int32) {
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            throw failure("socketpair")
        }
        return (ends[0], ends[1])
    }
}
