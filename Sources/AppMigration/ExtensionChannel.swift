import Foundation
import IndexedArchive
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One end of the extension protocol's socket (see ``ExtensionProtocol``): frames out and in.
///
/// Every call blocks its thread, so none is made on the cooperative pool: the host calls from a
/// thread of the session's own, the extension process from its reader and heartbeat threads.
///
/// `Sendable`: the descriptor is immutable; sending is serialized by the `sending` Mutex (the
/// heartbeat thread and the extension's appends share the socket, and frames must not
/// interleave), and the receive buffer and byte count live in the `receiving` Mutex.
///
/// A channel that owns its descriptor closes it only when the channel itself is gone: ending the
/// conversation (``hangUp()``) shuts the socket down instead. A descriptor closed while the
/// channel lived on would free its number for the next file the process opens, and a late send
/// (the cancel of a caller who cancelled just after the process was reaped) or receive through
/// the channel would then write into, or read from, a stranger's socket or file: a transfer's
/// archive stream once received such a frame and failed with "Connection reset by peer".
final class ExtensionChannel: Sendable {
    /// Why a receive or a send did not deliver a frame.
    enum Failure: Error, Equatable {
        /// The peer closed its end (or the socket failed) after `offset` bytes.
        case closed(offset: UInt64, reason: String)
        /// The frame at `offset` is not the protocol: why.
        case notProtocol(offset: UInt64, reason: String)
        /// The frame at `offset` declares `bytes`, past ``ExtensionProtocol/maxMessageBytes``.
        case tooLarge(offset: UInt64, bytes: UInt64)
    }

    private struct Incoming {
        var buffer: [UInt8] = []
        /// Bytes consumed as whole frames: where the next frame starts.
        var offset: UInt64 = 0
        var closed: String?
        var framesReceived = 0
    }

    let descriptor: Int32
    private let owned: Bool
    private let sending = Mutex(())
    private let receiving = Mutex(Incoming())

    /// A channel on `descriptor`, a connected stream socket; `owning` it, the channel closes it
    /// when it goes away.
    init(descriptor: Int32, owning: Bool = false) {
        self.descriptor = descriptor
        self.owned = owning
    }

    deinit {
        if owned { _ = Platform.close(descriptor) }
    }

    /// Ends the conversation both ways: the peer reads the end of the channel, and every later
    /// send or receive here fails as on a closed channel. The descriptor stays this channel's.
    func hangUp() {
        _ = shutdown(descriptor, Int32(SHUT_RDWR))
    }

    /// Bytes received as whole frames so far.
    var bytesReceived: UInt64 { receiving.withLock { $0.offset } }

    // MARK: - Sending

    /// Sends one frame, waiting at most `timeout` for room in the socket.
    func send(_ value: some Encodable, timeout: Duration = .seconds(30)) throws(Failure) {
        let frame = try Self.frame(value)
        // Where the conversation stood, for a failure: "at byte 0" was said of a peer that died
        // after 150 bytes had passed. Read before the sending lock is taken, never under it.
        let at = bytesReceived
        try sending.withLock { (_: inout ()) throws(Failure) in
            try write(frame, from: 0, deadline: ContinuousClock.now + timeout, at: at)
        }
    }

    /// Writes `frame` from byte `sent` on, waiting for room until `deadline`. Called with the
    /// `sending` lock held, so that frames never interleave; `at` is the protocol's offset to
    /// name in a failure.
    private func write(_ frame: [UInt8], from sent: Int, deadline: ContinuousClock.Instant, at: UInt64) throws(Failure) {
        var sent = sent
        while sent < frame.count {
            let result = frame.withUnsafeBytes { bytes in
                Platform.send(descriptor, bytes.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            }
            if result > 0 {
                sent += result
                continue
            }
            let error = errno
            guard result < 0 && (error == EAGAIN || error == EWOULDBLOCK || error == EINTR) else {
                throw .closed(offset: at, reason: String(cString: strerror(error)))
            }
            let left = deadline - ContinuousClock.now
            guard left > .zero else { throw .closed(offset: at, reason: "the peer reads nothing (send timed out)") }
            _ = Self.poll(descriptor, events: Int16(POLLOUT), within: min(left, .milliseconds(100)))
        }
    }

    /// `value` as a frame: its JSON's length, big-endian, and the JSON.
    private static func frame(_ value: some Encodable) throws(Failure) -> [UInt8] {
        let payload: Data
        do { payload = try JSONEncoder().encode(value) } catch {
            throw .notProtocol(offset: 0, reason: "cannot encode a message: \(error)")
        }
        let length = UInt32(payload.count)
        var frame: [UInt8] = [UInt8(length >> 24), UInt8((length >> 16) & 0xff), UInt8((length >> 8) & 0xff), UInt8(length & 0xff)]
        frame.append(contentsOf: payload)
        return frame
    }

    // MARK: - Receiving

    /// The next frame's JSON, or nil if none arrived within `timeout`.
    func receiveFrame(within timeout: Duration) throws(Failure) -> (payload: [UInt8], offset: UInt64)? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let frame = try takeFrame() { return frame }
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return nil }
            if Self.poll(descriptor, events: Int16(POLLIN), within: left) { try fill() }
        }
    }

    /// The next message if one has arrived whole, without waiting: callable from the cooperative
    /// pool, as it never blocks.
    func receiveNow() throws(Failure) -> ExtensionMessage? {
        if let frame = try takeFrame() { return try decode(frame) }
        try fill()
        guard let frame = try takeFrame() else { return nil }
        return try decode(frame)
    }

    /// Sends one small frame if the socket has room for it now, without waiting; false if it has
    /// none (then nothing was sent). Callable from the cooperative pool, as it never blocks: a
    /// frame this small goes into a local stream socket whole or not at all.
    func sendNow(_ message: ExtensionMessage) throws(Failure) -> Bool {
        let frame = try Self.frame(message)
        let at = bytesReceived
        return try sending.withLock { (_: inout ()) throws(Failure) -> Bool in
            let result = frame.withUnsafeBytes { bytes in
                Platform.send(descriptor, bytes.baseAddress!, bytes.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            }
            let error = errno
            if result == frame.count { return true }
            if result < 0 && (error == EAGAIN || error == EWOULDBLOCK || error == EINTR) { return false }
            if result < 0 { throw .closed(offset: at, reason: String(cString: strerror(error))) }
            // Part of it went: the rest must follow before any other frame, so wait for room here.
            try write(frame, from: result, deadline: ContinuousClock.now + .seconds(1), at: at)
            return true
        }
    }

    private func decode(_ frame: (payload: [UInt8], offset: UInt64)) throws(Failure) -> ExtensionMessage {
        do {
            return try JSONDecoder().decode(ExtensionMessage.self, from: Data(frame.payload))
        } catch {
            throw .notProtocol(
                offset: frame.offset, reason: "a frame of \(frame.payload.count) bytes that is no message: \(Self.preview(frame.payload))")
        }
    }

    /// The next message (after the hello), or nil if none arrived within `timeout`.
    func receive(within timeout: Duration) throws(Failure) -> ExtensionMessage? {
        guard let frame = try receiveFrame(within: timeout) else { return nil }
        return try decode(frame)
    }

    /// The hello, the first frame, or nil if none arrived within `timeout`.
    func receiveHello(within timeout: Duration) throws(Failure) -> ExtensionHello? {
        guard let (payload, offset) = try receiveFrame(within: timeout) else { return nil }
        guard let hello = try? JSONDecoder().decode(ExtensionHello.self, from: Data(payload)), hello.protocol == ExtensionProtocol.name
        else {
            throw .notProtocol(offset: offset, reason: "the first frame is not a hello: \(Self.preview(payload))")
        }
        return hello
    }

    private func takeFrame() throws(Failure) -> (payload: [UInt8], offset: UInt64)? {
        try receiving.withLock { (incoming: inout Incoming) throws(Failure) -> (payload: [UInt8], offset: UInt64)? in
            if incoming.buffer.count >= 4 {
                let length =
                    UInt64(incoming.buffer[0]) << 24 | UInt64(incoming.buffer[1]) << 16 | UInt64(incoming.buffer[2]) << 8
                    | UInt64(incoming.buffer[3])
                if length > UInt64(ExtensionProtocol.maxMessageBytes) {
                    // A program that is not an extension writes text, which reads as a huge length.
                    if incoming.framesReceived == 0 {
                        throw .notProtocol(
                            offset: incoming.offset, reason: "it began with \(Self.preview(Array(incoming.buffer.prefix(32)))), not a frame"
                        )
                    }
                    throw .tooLarge(offset: incoming.offset, bytes: length)
                }
                if incoming.buffer.count >= 4 + Int(length) {
                    let payload = Array(incoming.buffer[4..<(4 + Int(length))])
                    incoming.buffer.removeFirst(4 + Int(length))
                    let offset = incoming.offset
                    incoming.offset += 4 + length
                    incoming.framesReceived += 1
                    return (payload, offset)
                }
            }
            if let reason = incoming.closed {
                let offset = incoming.offset + UInt64(incoming.buffer.count)
                if incoming.buffer.isEmpty { throw .closed(offset: offset, reason: reason) }
                throw .closed(offset: offset, reason: "\(reason), in the middle of a frame")
            }
            return nil
        }
    }

    private func fill() throws(Failure) {
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        let count = chunk.withUnsafeMutableBytes { Platform.recv(descriptor, $0.baseAddress!, $0.count, Int32(MSG_DONTWAIT)) }
        let error = errno
        receiving.withLock { incoming in
            if count > 0 {
                incoming.buffer.append(contentsOf: chunk[0..<count])
            } else if count == 0 || error == ECONNRESET {
                incoming.closed = "it closed the channel"
            } else if error != EAGAIN && error != EWOULDBLOCK && error != EINTR {
                incoming.closed = "the channel failed: \(String(cString: strerror(error)))"
            }
        }
    }

    /// Whether `descriptor` became ready for `events` (or failed) within `timeout`.
    static func poll(_ descriptor: Int32, events: Int16, within timeout: Duration) -> Bool {
        var entry = pollfd(fd: descriptor, events: events, revents: 0)
        let milliseconds = Int32(
            clamping: max(1, timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000))
        return Platform.poll(&entry, 1, milliseconds) > 0
    }

    /// Bytes shown safely: printable ASCII as is, the rest as `\xHH`, at most 32.
    static func preview(_ bytes: [UInt8]) -> String {
        var text = "\""
        for byte in bytes.prefix(32) {
            if byte >= 0x20 && byte < 0x7f && byte != 0x22 && byte != 0x5c {
                text.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                text += String(format: "\\x%02x", byte)
            }
        }
        return text + (bytes.count > 32 ? "\"..." : "\"")
    }
}
