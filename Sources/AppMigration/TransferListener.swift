import IndexedArchive

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A listening TCP socket for a receiver: bound when created, so that the actual port (when port
/// 0 asked the system to choose) is known before the sender is started.
///
/// IPv4 or IPv6, whichever the endpoint resolves to first (`[::]` listens on both). Closed when
/// released; ``stopListening()`` refuses further connections before that, as a receiver does once
/// its sender has paired.
public final class TransferListener: Sendable {
    /// Where it listens, with the port the system chose.
    public let endpoint: TransferEndpoint
    let fd: Int32

    /// Binds and listens on `endpoint`. A host name is looked up with the system resolver, which
    /// may wait for DNS: listen on a numeric address (or `[::]`) where that matters.
    public init(_ endpoint: TransferEndpoint) throws {
        var failure: TransferError?
        for address in try endpoint.resolve(passive: true) {
            let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else {
                failure = TransferSocket.failure("socket")
                continue
            }
            // Non-blocking, so an accept after poll never hangs on a connection that was aborted in
            // between; accepted sockets do not inherit it.
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            var yes: Int32 = 1
            var no: Int32 = 0
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
            if address.family == AF_INET6 {
                // `[::]` takes IPv4 connections too, as people expect of "every address".
                setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &no, socklen_t(MemoryLayout<Int32>.size))
            }
            var storage = address.storage
            let bound = withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, address.length) }
            }
            // A backlog of 1,024: a flood of connections must not fill the kernel's queue, where
            // the real sender's would be dropped before the receiver could see it (it took 8,
            // then 300 connections that each sent a hello kept a queue of 128 full).
            guard bound == 0, listen(fd, 1024) == 0 else {
                failure = TransferSocket.failure("listen on \(endpoint)")
                close(fd)
                continue
            }
            self.fd = fd
            self.endpoint = TransferEndpoint(host: endpoint.host, port: TransferEndpoint.boundPort(of: fd))
            return
        }
        throw failure ?? TransferError(.invalidAddress, "cannot listen on \(endpoint)")
    }

    /// Refuses further connections (a sender connecting now is refused at once), while the one
    /// accepted goes on. The socket itself is closed when the listener is released.
    public func stopListening() {
        shutdown(fd, Int32(SHUT_RDWR))
    }

    deinit {
        close(fd)
    }

    /// Waits for one sender and returns the connected socket (blocking, close-on-exec), which the
    /// caller closes.
    ///
    /// The wait is a `poll(2)` with the real timeout on a thread of its own, so a receiver waiting
    /// for minutes for its sender holds none of the cooperative pool's threads and burns no CPU;
    /// cancelling the caller ends it at once.
    /// - Throws: ``TransferError`` `.timedOut` if no sender came within `timeout`;
    ///   `CancellationError`.
    public func accept(timeout: Duration? = nil) async throws -> Int32 {
        let deadline = timeout.map { ContinuousClock.now + $0 }
        let endpoint = endpoint
        let fd = fd
        let connection = try await TransferSocket.onThread("amk-accept") { wake -> Int32? in
            while try TransferSocket.wait(fd, for: Int16(POLLIN), until: deadline, wake: wake) {
                let connection = Platform.accept(fd)
                if connection >= 0 { return connection }
                // Aborted between the poll and the accept, or taken by someone else: wait again.
                if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED { continue }
                throw TransferSocket.failure("accept on \(endpoint)")
            }
            return nil
        }
        guard let connection else {
            throw TransferError(.timedOut, "no sender connected to \(endpoint) within \(TransferSocket.seconds(timeout ?? .zero))")
        }
        // Close-on-exec already (Platform.accept sets it atomically), and blocking, as documented;
        // the transfer itself only reads and writes it after a poll, or with MSG_DONTWAIT.
        _ = fcntl(connection, F_SETFL, fcntl(connection, F_GETFL) & ~O_NONBLOCK)
        return connection
    }
}
