import Foundation
import TestSupport
import Testing

@testable import AppMigration

/// What `TransferListener.accept` hands back: a blocking socket that no child process inherits.
@Suite struct TransferListenerTests {
    @Test func anAcceptedConnectionIsBlockingAndCloseOnExec() async throws {
        let listener = try TransferListener(TransferEndpoint(host: "127.0.0.1", port: 0))
        async let accepted = listener.accept(timeout: .seconds(30))
        let client = try await TransferSocket.connect(to: listener.endpoint, timeout: .seconds(30))
        defer { close(client) }
        let connection = try await accepted
        defer { close(connection) }
        // Set by accept4 itself: a process spawned by another thread between an accept and an
        // fcntl would otherwise keep the connection open after the receiver closed it.
        #expect(fcntl(connection, F_GETFD) & FD_CLOEXEC != 0)
        #expect(fcntl(connection, F_GETFL) & O_NONBLOCK == 0)
        // It is the client's connection: what one writes, the other reads.
        var byte: UInt8 = 42
        #expect(write(client, &byte, 1) == 1)
        var received: UInt8 = 0
        #expect(read(connection, &received, 1) == 1 && received == 42)
    }
}
