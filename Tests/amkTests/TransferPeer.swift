import Crypto
import Foundation
import Synchronization
import TestSupport

@testable import AppMigration

/// Plain blocking sockets on 127.0.0.1 that play one side of the transfer protocol the way the
/// real code never does, to test how `amk send` and `amk receive` bound their waits for a peer.
/// They pair properly (with the library's `SecureChannel`), then misbehave.
enum TransferPeer {
    /// A hello of this protocol version with a fresh key.
    static func hello() -> (bytes: [UInt8], key: Curve25519.KeyAgreement.PrivateKey) {
        let key = Curve25519.KeyAgreement.PrivateKey()
        return (TransferFrame.hello(publicKey: Array(key.publicKey.rawRepresentation)), key)
    }

    /// Pairs as a sender with `code`; nil if the receiver refused.
    static func pairAsSender(_ fd: Int32, code: String) -> SecureChannel? {
        guard let code = try? PairingCode(parsing: code) else { return nil }
        let (ours, key) = hello()
        guard sendAll(fd, ours) else { return nil }
        let theirs = receive(fd, 48)
        guard theirs.count == 48,
            let channel = try? SecureChannel(
                role: .sender, privateKey: key, peerPublicKey: Array(theirs[16...]), code: code,
                senderHello: ours, receiverHello: theirs),
            sendAll(fd, channel.ownConfirmation), channel.isPeerConfirmation(receive(fd, 32))
        else { return nil }
        return channel
    }

    /// Pairs as a receiver with `code`; nil if the sender's hello or confirmation is wrong.
    static func pairAsReceiver(_ fd: Int32, code: String) -> SecureChannel? {
        guard let code = try? PairingCode(parsing: code) else { return nil }
        let theirs = receive(fd, 48)
        let (ours, key) = hello()
        guard theirs.count == 48, sendAll(fd, ours),
            let channel = try? SecureChannel(
                role: .receiver, privateKey: key, peerPublicKey: Array(theirs[16...]), code: code,
                senderHello: theirs, receiverHello: ours),
            channel.isPeerConfirmation(receive(fd, 32)), sendAll(fd, channel.ownConfirmation)
        else { return nil }
        return channel
    }

    /// A listening socket on a port the system picks, and that port.
    static func listen() throws -> (fd: Int32, endpoint: String) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard fd >= 0, bound, Glibc.listen(fd, 4) == 0 else { throw CocoaError(.fileWriteUnknown) }
        return (fd, "127.0.0.1:\(UInt16(bigEndian: address.sin_port))")
    }

    /// A connected socket to `endpoint` (`127.0.0.1:PORT`).
    static func connect(_ endpoint: String) throws -> Int32 {
        guard let port = endpoint.split(separator: ":").last.flatMap({ UInt16($0) }) else { throw CocoaError(.fileReadUnknown) }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard fd >= 0, connected == 0 else {
            close(fd)
            throw CocoaError(.fileReadUnknown)
        }
        return fd
    }

    /// Reads `count` bytes, or fewer if the peer closes or 30 s pass without a byte.
    static func receive(_ fd: Int32, _ count: Int) -> [UInt8] {
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: max(count, 1))
        while bytes.count < count {
            let got = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, count - bytes.count, 0) }
            if got <= 0 { break }
            bytes += buffer[..<got]
        }
        return bytes
    }

    /// Reads until the peer closes its side (or 30 s pass without a byte); how many bytes came.
    static func readToEnd(_ fd: Int32) -> Int {
        var total = 0
        while true {
            let got = receive(fd, 64 << 10).count
            if got == 0 { return total }
            total += got
        }
    }
}

/// A receiver that pairs with `code`, reads the whole archive to the sender's half-close, and then
/// says nothing, holding the connection open until ``release()``.
final class SilentReceiver: Sendable {
    let endpoint: String
    private let archived = Atomic<Int>(-1)
    private let released = Atomic<Bool>(false)

    init(code: String) throws {
        let (listening, endpoint) = try TransferPeer.listen()
        self.endpoint = endpoint
        let thread = Thread { [self] in
            let fd = accept(listening, nil, nil)
            close(listening)
            guard TransferPeer.pairAsReceiver(fd, code: code) != nil else { return }
            archived.store(TransferPeer.readToEnd(fd), ordering: .releasing)
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
        let fd = try TransferPeer.connect(endpoint)
        let milliseconds = Int32(interval.components.seconds * 1000 + interval.components.attoseconds / 1_000_000_000_000_000)
        let thread = Thread { [self] in
            defer { close(fd) }
            guard let channel = TransferPeer.pairAsSender(fd, code: code),
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
            let header = TransferPeer.receive(fd, 4)
            guard header.count == 4, let length = RecordOpener.sealedLength(header) else { return }
            let sealed = TransferPeer.receive(fd, length)
            let status = try? channel.opener.open(header: header, sealed: sealed).0
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
