import AppMigration
import Foundation
import Synchronization
import TestSupport
import TransferTestSupport

/// A man in the middle on a thread of its own: forwards one connection both ways, and does
/// `tamper` to the client-to-server stream (the sender's), whose bytes it also records.
final class TamperingProxy: Sendable {
    enum Tampering: Sendable {
        /// Forward unchanged (to record a session).
        case none
        /// Forward the sender's first this many bytes, then close both sides: a network that
        /// fails at a chosen byte.
        case cutAfter(Int)
        /// XOR the byte at this offset of the sender's stream with 0x01.
        case flip(at: Int)
        /// Leave out the sender's record number `index` (0 is the first after the handshake).
        case dropRecord(Int)
        /// Swap the sender's records `index` and `index + 1`.
        case swapRecords(Int)
        /// Leave out the sender's last record (its end record) and forward everything else.
        case dropLastRecord
        /// XOR the byte this many bytes before the end of the sender's stream with 0x01 (the
        /// stream's length varies with how the records fall, so a fixed offset could miss it).
        case flipFromEnd(Int)
        /// Forward all but the sender's last this many bytes, then close: a cut near the end.
        case truncateLast(Int)
        /// Send `bytes` to the server instead of what the client sends (a replayed session).
        case replay([UInt8])
    }

    let endpoint: TransferEndpoint
    private let listenFD: Int32
    private let state = Mutex<(recorded: [UInt8], forwarded: Int, finished: Bool)>(([], 0, false))

    init(to target: TransferEndpoint, _ tampering: Tampering) throws {
        listenFD = try rawListen()
        endpoint = TransferEndpoint(host: "127.0.0.1", port: boundPort(listenFD))
        let thread = Thread { [self] in
            run(target: target, tampering: tampering)
            state.withLock { $0.finished = true }
        }
        thread.start()
    }

    /// What the client sent, as it sent it.
    var recorded: [UInt8] { state.withLock { $0.recorded } }
    /// How many bytes of it went on to the server.
    var forwarded: Int { state.withLock { $0.forwarded } }

    private func run(target: TransferEndpoint, tampering: Tampering) {
        defer { close(listenFD) }
        let client = accept(listenFD, nil, nil)
        guard client >= 0 else { return }
        defer { close(client) }
        guard let server = try? rawConnect(target) else { return }
        defer { close(server) }
        if case .replay(let bytes) = tampering {
            _ = sendAll(server, bytes)
            shutdown(server, Int32(SHUT_WR))
        }
        var editor = StreamEditor(tampering: tampering)
        var clientOpen = true
        var serverOpen = true
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while clientOpen || serverOpen {
            var fds = [
                pollfd(fd: clientOpen ? client : -1, events: Int16(POLLIN), revents: 0),
                pollfd(fd: serverOpen ? server : -1, events: Int16(POLLIN), revents: 0)
            ]
            guard poll(&fds, 2, 1000) >= 0 else { return }
            if clientOpen && fds[0].revents != 0 {
                let got = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress!, $0.count, 0) }
                if got <= 0 {
                    clientOpen = false
                    guard sendAll(server, editor.finish()) || true else { return }
                    shutdown(server, Int32(SHUT_WR))
                } else {
                    state.withLock { $0.recorded += buffer[..<got] }
                    if case .replay = tampering { continue }
                    var out = editor.pass(Array(buffer[..<got]))
                    var cut = false
                    if case .cutAfter(let limit) = tampering {
                        let room = max(0, limit - forwarded)
                        cut = out.count >= room
                        out = Array(out.prefix(room))
                    }
                    guard sendAll(server, out) else { return }
                    state.withLock { $0.forwarded += out.count }
                    if cut { return }  // the cut: both sockets are closed by the defers
                }
            }
            if serverOpen && fds[1].revents != 0 {
                let got = buffer.withUnsafeMutableBytes { recv(server, $0.baseAddress!, $0.count, 0) }
                if got <= 0 {
                    serverOpen = false
                    shutdown(client, Int32(SHUT_WR))
                } else {
                    guard sendAll(client, buffer[..<got]) else { return }
                }
            }
        }
    }
}

/// Applies a tampering to the sender's stream as it passes: the handshake, then length-prefixed
/// records.
private struct StreamEditor {
    let tampering: TamperingProxy.Tampering
    /// Bytes of the stream seen so far.
    var offset = 0
    /// Bytes of an unfinished record (record modes only).
    var pending: [UInt8] = []
    var records = 0
    var held: [UInt8]?

    init(tampering: TamperingProxy.Tampering) {
        self.tampering = tampering
    }

    /// What to forward for `bytes`.
    mutating func pass(_ bytes: [UInt8]) -> [UInt8] {
        switch tampering {
        case .none, .replay, .cutAfter:
            offset += bytes.count
            return bytes
        case .flipFromEnd(let count), .truncateLast(let count):
            // The handshake goes through as it comes (both sides wait on it); after it, the last
            // `count` bytes are held until the stream ends.
            let handshake = max(0, min(bytes.count, senderHandshakeBytes - offset))
            offset += bytes.count
            var out = Array(bytes[..<handshake])
            pending += bytes[handshake...]
            guard pending.count > count else { return out }
            out += pending[..<(pending.count - count)]
            pending.removeFirst(pending.count - count)
            return out
        case .flip(let at):
            var out = bytes
            if at >= offset && at < offset + bytes.count { out[at - offset] ^= 0x01 }
            offset += bytes.count
            return out
        case .dropRecord, .swapRecords, .dropLastRecord:
            var out: [UInt8] = []
            for byte in bytes {
                if offset < senderHandshakeBytes {
                    out.append(byte)
                    offset += 1
                    continue
                }
                offset += 1
                pending.append(byte)
                if pending.count >= 4 {
                    let length = Int(pending[0]) | Int(pending[1]) << 8 | Int(pending[2]) << 16 | Int(pending[3]) << 24
                    if pending.count == 4 + length {
                        out += complete(pending)
                        pending = []
                    }
                }
            }
            return out
        }
    }

    /// A whole record: forwarded, dropped, or held to swap.
    private mutating func complete(_ record: [UInt8]) -> [UInt8] {
        defer { records += 1 }
        switch tampering {
        case .dropRecord(let index) where records == index:
            return []
        case .swapRecords(let index) where records == index:
            held = record
            return []
        case .swapRecords(let index) where records == index + 1:
            defer { held = nil }
            return record + (held ?? [])
        case .dropLastRecord:
            // Each record goes on only once the next has come: the last one never does.
            defer { held = record }
            return held ?? []
        default:
            return record
        }
    }

    /// What is left when the client closes.
    mutating func finish() -> [UInt8] {
        defer { pending = [] }
        switch tampering {
        case .flipFromEnd:
            if !pending.isEmpty { pending[0] ^= 0x01 }
            return pending
        case .truncateLast:
            return []
        default:
            return pending
        }
    }
}
