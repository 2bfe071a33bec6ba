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
    private let sending = Mutex(())
    private let receiving = Mutex(Incoming())

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Bytes received as whole frames so far.
    var bytesReceived: UInt64 { receiving.withLock { $0.offset } }

    // MARK: - Sending

    /// Sends one frame, waiting at most `timeout` for room in the socket.
    func send(_ value: some Encodable, timeout: Duration = .seconds(30)) throws(Failure) {
        let payload: Data
        do { payload = try JSONEncoder().encode(value) } catch {
            throw .notProtocol(offset: 0, reason: "cannot encode a message: \(error)")
        }
        var frame = [UInt8](repeating: 0, count: 4)
        let length = UInt32(payload.count)
        frame[0] = UInt8(length >> 24)
        frame[1] = UInt8((length >> 16) & 0xff)
        frame[2] = UInt8((length >> 8) & 0xff)
        frame[3] = UInt8(length & 0xff)
        frame.append(contentsOf: payload)
        let deadline = ContinuousClock.now + timeout
        try sending.withLock { (_: inout ()) throws(Failure) in
            var sent = 0
            while sent < frame.count {
                let result = frame.withUnsafeBytes { bytes in
                    Platform.send(descriptor, bytes.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
                }
                if result > 0 {
                    sent += result
                    continue
                }
                let error = errno
                if result < 0 && (error == EAGAIN || error == EWOULDBLOCK || error == EINTR) {
                    let left = deadline - ContinuousClock.now
                    guard left > .zero else { throw .closed(offset: 0, reason: "the peer reads nothing (send timed out)") }
                    _ = Self.poll(descriptor, events: Int16(POLLOUT), within: min(left, .milliseconds(100)))
                    continue
                }
                throw .closed(offset: 0, reason: String(cString: strerror(error)))
            }
        }
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

    /// The next message (after the hello), or nil if none arrived within `timeout`.
    func receive(within timeout: Duration) throws(Failure) -> ExtensionMessage? {
        guard let (payload, offset) = try receiveFrame(within: timeout) else { return nil }
        do {
            return try JSONDecoder().decode(ExtensionMessage.self, from: Data(payload))
        } catch {
            throw .notProtocol(offset: offset, reason: "a frame of \(payload.count) bytes that is no message: \(Self.preview(payload))")
        }
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
