#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A listening TCP socket for a receiver: bound when created, so that the actual port (when port
/// 0 asked the system to choose) is known before the sender is started.
///
/// Closed when released.
public final class TransferListener: Sendable {
    /// Where it listens, with the port the system chose.
    public let endpoint: TransferEndpoint
    let fd: Int32

    /// Binds and listens on `endpoint`.
    public init(_ endpoint: TransferEndpoint) throws {
        var address = try endpoint.socketAddress()
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TransferSocket.failure("socket") }
        // Non-blocking, so an accept after poll never hangs on a connection that was aborted in
        // between; accepted sockets do not inherit it.
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        let length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0, listen(fd, 4) == 0 else {
            let error = TransferSocket.failure("listen on \(endpoint)")
            close(fd)
            throw error
        }
        var actual = sockaddr_in()
        var actualLength = length
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &actualLength) }
        }
        self.fd = fd
        self.endpoint = TransferEndpoint(host: endpoint.host, port: UInt16(bigEndian: actual.sin_port))
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
                let connection = Glibc.accept(fd, nil, nil)
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
        // Close-on-exec (accept4 is not visible to Swift), and blocking, as documented; the
        // transfer itself only reads and writes it after a poll, or with MSG_DONTWAIT.
        _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
        _ = fcntl(connection, F_SETFL, fcntl(connection, F_GETFL) & ~O_NONBLOCK)
        return connection
    }
}
