import AppMigration
import Foundation
import Synchronization
import TestSupport
import TransferTestSupport

// Peers on plain blocking sockets on 127.0.0.1 that play one side of the transfer protocol the way
// the real code never does, to test how `amk send` and `amk receive` bound their waits for a
// peer. They pair properly (TransferTestSupport's `PairedPeer`), then misbehave.

/// A listening socket on a port the system picks, and its `HOST:PORT` for the command line.
func listenOnLoopback() throws -> (fd: Int32, endpoint: String) {
    let fd = try rawListen()
    return (fd, "127.0.0.1:\(boundPort(fd))")
}

/// A receiver that pairs with `code`, reads the whole archive to the sender's half-close, and then
/// says nothing, holding the connection open until ``release()``.
final class SilentReceiver: Sendable {
    let endpoint: String
    private let archived = Atomic<Int>(-1)
    private let released = Atomic<Bool>(false)

    init(code: String) throws {
        let (listening, endpoint) = try listenOnLoopback()
        let code = try PairingCode(parsing: code)
        self.endpoint = endpoint
        let thread = Thread { [self] in
            let fd = accept(listening, nil, nil)
            close(listening)
            guard PairedPeer.actAsReceiver(fd, code: code) != nil else { return }
            archived.store(readToEnd(fd), ordering: .releasing)
            while !released.load(ordering: .acquiring) { usleep(10_000) }
            close(fd)
        }
        thread.start()
    }

    /// Bytes of the archive read before the sender's half-close; -1 until then.
    var archivedBytes: Int { archived.load(ordering: .acquiring) }

    func release() {
        released.store(true, ordering: .releasing)
    }
}

/// A sender that pairs with `code`, then sends `bytes` sealed in one record, one byte at a time,
/// one every `interval` (each byte resets a plain socket timeout), until the receiver answers or
/// the bytes run out; then it reads the receiver's status record.
final class TricklingSender: Sendable {
    private let answer = Mutex<SecureChannel.RecordType?>(nil)
    private let sentCount = Atomic<Int>(0)
    private let started = Mutex<Date?>(nil)

    init(to endpoint: String, code: String, bytes: [UInt8], every interval: Duration) throws {
        let fd = try rawConnect(TransferEndpoint(parsing: endpoint))
        let code = try PairingCode(parsing: code)
        let milliseconds = Int32(interval.components.seconds * 1000 + interval.components.attoseconds / 1_000_000_000_000_000)
        let thread = Thread { [self] in
            defer { close(fd) }
            guard let channel = PairedPeer.actAsSender(fd, code: code),
                let record = try? channel.sealer.seal(.data, bytes)
            else { return }
            started.withLock { $0 = Date() }
            for byte in record {
                var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                if poll(&entry, 1, milliseconds) > 0 { break }  // the receiver answered
                guard sendAll(fd, [byte]) else { break }
                sentCount.add(1, ordering: .relaxed)
            }
            shutdown(fd, Int32(SHUT_WR))
            let status = PairedPeer.readRecord(fd, channel)?.0
            answer.withLock { $0 = status }
        }
        thread.start()
    }

    /// When the trickle began (after the hellos).
    var trickleStart: Date? { started.withLock { $0 } }
    /// Bytes trickled.
    var sent: Int { sentCount.load(ordering: .relaxed) }
    /// The type of the receiver's status record, once read and authenticated.
    var status: SecureChannel.RecordType? { answer.withLock { $0 } }
}
