import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Copies the archive between the TCP connection and the engine's end of a local socket pair, on
/// a thread of its own, and cuts off a peer that makes too little progress.
///
/// The engine reads (or writes) a descriptor with blocking calls on its own threads, so it cannot
/// bound how slowly the peer goes: `SO_RCVTIMEO` fires only when not a single byte arrives for
/// its whole length, and a sender trickling one byte a second would keep the receiver, and the
/// container's lock, for as long as it likes. The engine is therefore given the other end of a
/// socket pair instead of the connection, and this relay moves the bytes, waiting for the peer
/// in `poll(2)` with a deadline. The rule: each time ``TransferLimits/minimumProgress`` bytes have
/// gone through, a new idle window starts; if the time spent waiting for the peer in one window
/// reaches ``TransferLimits/idle`` first, the peer is idle and the relay ends. Time spent waiting
/// for our own side (an engine busy decompressing or compressing) is not the peer's, and does not
/// count.
///
/// When the relay ends, for whatever reason, it closes its end of the pair: the engine then sees
/// the stream end (a receiving engine fails on a cut archive, a sending one gets `EPIPE`), and
/// ``ending()`` says what the peer did, for the message. The connection itself is not closed: it
/// belongs to the caller, who still sends or reads the status on it, and who must await
/// ``ending()`` before closing it (the relay's thread polls it until then).
final class TransferRelay: Sendable {
    /// Which side of the relay is the peer, whose waits are timed.
    enum Peer: Sendable {
        /// The relay reads the peer (a receiver reading a sender).
        case source
        /// The relay writes the peer (a sender writing to a receiver).
        case destination
    }

    /// Why the relay stopped. `bytes` counts what went through it in all.
    enum Ending: Sendable {
        /// The source ended and everything was passed on: a sender's half-close, or the end of
        /// the export.
        case finished(bytes: Int)
        /// The peer moved `bytesInWindow` bytes in an idle window, fewer than the minimum.
        case idle(window: Duration, bytesInWindow: Int, bytes: Int)
        /// The peer closed the connection while the relay was writing to it.
        case peerClosed(bytes: Int)
        /// The peer reset the connection.
        case reset(bytes: Int)
        /// Our own side closed its end (an engine that stopped reading because the import failed).
        case localClosed(bytes: Int)
        /// ``stop()`` was called.
        case stopped(bytes: Int)
        /// A system call failed.
        case failed(TransferError, bytes: Int)

        var bytes: Int {
            switch self {
            case .finished(let bytes), .idle(_, _, let bytes), .peerClosed(let bytes), .reset(let bytes),
                 .localClosed(let bytes), .stopped(let bytes), .failed(_, let bytes):
                bytes
            }
        }
    }

    private struct State {
        var ending: Ending?
        var waiters: [CheckedContinuation<Ending, Never>] = []
    }

    private let wake: TransferWake
    private let state = Mutex(State())

    /// Starts relaying from `source` to `destination`; `peer` says which is the connection.
    /// `owned` (the engine's pair end on our side) is closed when the relay ends.
    init(from source: Int32, to destination: Int32, peer: Peer, limits: TransferLimits, owning owned: Int32,
         name: String) throws {
        wake = try TransferWake()
        let thread = Thread { [self] in
            // Both are sockets, written with MSG_NOSIGNAL; non-blocking, because every wait is a
            // poll that also watches the wake-up.
            _ = fcntl(source, F_SETFL, fcntl(source, F_GETFL) | O_NONBLOCK)
            _ = fcntl(destination, F_SETFL, fcntl(destination, F_GETFL) | O_NONBLOCK)
            let ending = Self.run(from: source, to: destination, peer: peer, limits: limits, wake: wake)
            if peer == .destination, case .finished = ending { shutdown(destination, Int32(SHUT_WR)) }
            close(owned)
            let waiters = state.withLock { state in
                state.ending = ending
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume(returning: ending) }
        }
        thread.name = name
        thread.stackSize = 512 << 10
        thread.start()
    }

    /// Ends the relay soon (at its next wait, which never lasts): ``ending()`` then reports
    /// `.stopped`, unless it had ended already.
    func stop() {
        wake.signal()
    }

    /// Why the relay ended, once it has. Cancelling the caller stops the relay, and this still
    /// waits for its thread to let go of the connection, which is then prompt.
    func ending() async -> Ending {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Ending, Never>) in
                let ended = state.withLock { state in
                    if state.ending == nil { state.waiters.append(continuation) }
                    return state.ending
                }
                if let ended { continuation.resume(returning: ended) }
            }
        } onCancel: {
            stop()
        }
    }

    /// The relay's loop, on its own thread.
    private static func run(from source: Int32, to destination: Int32, peer: Peer, limits: TransferLimits,
                            wake: TransferWake) -> Ending {
        var window = IdleWindow(length: limits.idle, minimum: limits.minimumProgress)
        var total = 0
        var buffer = [UInt8](repeating: 0, count: 256 << 10)
        do {
            while true {
                // Wait for bytes to pass on: the peer's waits are timed, our engine's are not.
                if peer == .source {
                    if let idle = try window.wait(source, for: Int16(POLLIN), wake: wake, total: total) { return idle }
                } else {
                    _ = try TransferSocket.wait(source, for: Int16(POLLIN), until: nil, wake: wake)
                }
                let got = buffer.withUnsafeMutableBytes { recv(source, $0.baseAddress!, $0.count, Int32(MSG_DONTWAIT)) }
                if got < 0 {
                    if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { continue }
                    if errno == ECONNRESET { return peer == .source ? .reset(bytes: total) : .localClosed(bytes: total) }
                    return .failed(TransferSocket.failure("recv"), bytes: total)
                }
                if got == 0 { return .finished(bytes: total) }
                if peer == .source { window.moved(got) }
                var done = 0
                while done < got {
                    if peer == .destination {
                        if let idle = try window.wait(destination, for: Int16(POLLOUT), wake: wake, total: total + done) {
                            return idle
                        }
                    } else {
                        _ = try TransferSocket.wait(destination, for: Int16(POLLOUT), until: nil, wake: wake)
                    }
                    let sent = buffer.withUnsafeBytes {
                        send(destination, $0.baseAddress! + done, got - done, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL))
                    }
                    if sent < 0 {
                        if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { continue }
                        if errno == EPIPE || errno == ECONNRESET {
                            guard peer == .destination else { return .localClosed(bytes: total + done) }
                            return errno == EPIPE ? .peerClosed(bytes: total + done) : .reset(bytes: total + done)
                        }
                        return .failed(TransferSocket.failure("send"), bytes: total + done)
                    }
                    done += sent
                    if peer == .destination { window.moved(sent) }
                }
                total += got
            }
        } catch let error as TransferError {
            return .failed(error, bytes: total)
        // A thread of our own, in no task: a CancellationError here is only the wake-up of stop().
        // cancellation: a cancelled caller of ending() stopped the relay and checks for cancellation itself
        } catch {
            return .stopped(bytes: total)
        }
    }
}

/// The relay's idle rule: the time spent waiting for the peer since the last
/// ``TransferLimits/minimumProgress`` bytes went through must stay under the idle timeout.
private struct IdleWindow {
    let length: Duration
    let minimum: Int
    /// Time spent waiting for the peer in this window.
    var waited: Duration = .zero
    /// Bytes the peer moved in this window.
    var progress = 0

    init(length: Duration, minimum: Int) {
        self.length = length
        self.minimum = minimum
    }

    /// Counts `bytes` the peer moved; enough of them start a new window.
    mutating func moved(_ bytes: Int) {
        progress += bytes
        if progress >= minimum {
            progress = 0
            waited = .zero
        }
    }

    /// Waits for the peer, for at most what is left of the window.
    /// - Returns: the ending if the window ran out first, nil once `fd` is ready.
    mutating func wait(_ fd: Int32, for events: Int16, wake: TransferWake, total: Int) throws -> TransferRelay.Ending? {
        while true {
            if waited >= length {
                return .idle(window: length, bytesInWindow: progress, bytes: total)
            }
            let start = ContinuousClock.now
            let ready = try TransferSocket.wait(fd, for: events, until: start + (length - waited), wake: wake)
            waited += ContinuousClock.now - start
            if ready { return nil }
        }
    }
}
