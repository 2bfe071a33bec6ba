import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Moves the archive between the TCP connection and the engine's end of a local socket pair, on a
/// thread of its own, sealing or opening the transfer's records on the way, and cuts off a peer
/// that makes too little progress.
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
/// A sender's relay seals what the engine writes into records (``SecureChannel``) and ends the
/// stream with an end record. A receiver's relay opens them, and holds each data record back until
/// the next record has checked out: the archive's last bytes (its xz footer) are always in the last
/// data record, so the engine can finish an archive only once the end record has arrived. A
/// stream cut anywhere, even exactly after a record, or one altered, reordered or replayed, never
/// completes an import.
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

    /// What the relay does to the bytes.
    enum Codec: Sendable {
        /// A sender's: the engine's bytes become records on the connection.
        case seal(RecordSealer)
        /// A receiver's: records from the connection become the engine's bytes, at most
        /// `maxBytes` of them.
        case open(RecordOpener, maxBytes: UInt64)
    }

    /// Why the relay stopped. `bytes` counts the archive bytes that went through it in all.
    enum Ending: Sendable {
        /// Everything was passed on: the end of the export, sealed with an end record; or, on a
        /// receiver, the sender's end record.
        case finished(bytes: Int)
        /// The connection ended without the sender's end record.
        case truncated(bytes: Int)
        /// A record failed authentication, or its length or type is not the protocol's.
        case tampered(TransferError, bytes: Int)
        /// The sender's archive went past the receiver's limit.
        case tooLarge(limit: UInt64, bytes: Int)
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
            case .finished(let bytes), .truncated(let bytes), .tampered(_, let bytes), .tooLarge(_, let bytes),
                .idle(_, _, let bytes), .peerClosed(let bytes), .reset(let bytes), .localClosed(let bytes),
                .stopped(let bytes), .failed(_, let bytes):
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

    /// Starts relaying from `source` to `destination`; `codec` says which is the connection (the
    /// destination when sealing, the source when opening). `owned` (the engine's pair end on our
    /// side) is closed when the relay ends.
    init(
        from source: Int32, to destination: Int32, codec: Codec, limits: TransferLimits, owning owned: Int32,
        name: String
    ) throws {
        let peer: Peer
        if case .seal = codec { peer = .destination } else { peer = .source }
        wake = try TransferWake()
        let thread = Thread { [self] in
            // Both are sockets, written with MSG_NOSIGNAL; non-blocking, because every wait is a
            // poll that also watches the wake-up.
            _ = fcntl(source, F_SETFL, fcntl(source, F_GETFL) | O_NONBLOCK)
            _ = fcntl(destination, F_SETFL, fcntl(destination, F_GETFL) | O_NONBLOCK)
            var pump = Pump(
                source: source, destination: destination, peer: peer, wake: wake,
                window: IdleWindow(length: limits.idle, minimum: limits.minimumProgress, countsEveryMoment: peer == .source))
            let ending =
                switch codec {
                case .seal(let sealer): pump.seal(with: sealer)
                case .open(let opener, let maxBytes): pump.open(with: opener, maxBytes: maxBytes)
                }
            if peer == .destination, case .finished = ending { shutdown(destination, Int32(SHUT_WR)) }
            // The ending is known before the engine's end closes, so whoever sees that end can
            // already ask what became of the stream.
            let waiters = state.withLock { state in
                state.ending = ending
                defer { state.waiters = [] }
                return state.waiters
            }
            close(owned)
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
}

/// The relay's loops, on its thread: what it reads, from where, and the waits.
private struct Pump {
    let source: Int32
    let destination: Int32
    let peer: TransferRelay.Peer
    let wake: TransferWake
    var window: IdleWindow
    /// Archive bytes passed on so far.
    var total = 0

    /// What went wrong, as an ending, or nil to go on.
    typealias Outcome = TransferRelay.Ending?

    /// A sender's loop: reads what the engine writes, seals it, writes the records to the peer;
    /// at the engine's end, an end record.
    mutating func seal(with sealer: RecordSealer) -> TransferRelay.Ending {
        var buffer = [UInt8](repeating: 0, count: SecureChannel.maxPayload)
        do {
            while true {
                _ = try TransferSocket.wait(source, for: Int16(POLLIN), until: nil, wake: wake)
                let got = buffer.withUnsafeMutableBytes { recv(source, $0.baseAddress!, $0.count, Int32(MSG_DONTWAIT)) }
                if got < 0 {
                    if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { continue }
                    if errno == ECONNRESET { return .localClosed(bytes: total) }
                    return .failed(TransferSocket.failure("recv"), bytes: total)
                }
                let record =
                    got == 0
                    ? try sealer.seal(.end)
                    : try buffer.withUnsafeBytes { try sealer.seal(.data, UnsafeRawBufferPointer(rebasing: $0[..<got])) }
                if let ending = try write(record) { return ending }
                if got == 0 { return .finished(bytes: total) }
                total += got
            }
            // cancellation: ended(by:) turns the wake-up of stop() into .stopped; the caller checks for cancellation
        } catch {
            return ended(by: error)
        }
    }

    /// A receiver's loop: reads records from the peer, opens them, and writes their bytes to the
    /// engine, each data record only once the next one has checked out.
    mutating func open(with opener: RecordOpener, maxBytes: UInt64) -> TransferRelay.Ending {
        var inbox: [UInt8] = []
        var start = 0
        var held: [UInt8]?
        var buffer = [UInt8](repeating: 0, count: 256 << 10)
        do {
            while true {
                // Every whole record in the inbox.
                while inbox.count - start >= 4 {
                    guard let length = RecordOpener.sealedLength(inbox[start..<start + 4]) else {
                        return .tampered(
                            TransferError(
                                .tampered,
                                "record \(opener.opened) announces a length outside 17 to "
                                    + "\(SecureChannel.maxSealedRecord) bytes"), bytes: total)
                    }
                    guard inbox.count - start >= 4 + length else { break }
                    let (type, payload) = try opener.open(
                        header: inbox[start..<start + 4],
                        sealed: inbox[(start + 4)..<(start + 4 + length)])
                    start += 4 + length
                    switch type {
                    case .data:
                        // Progress is archive bytes: records that carry none (a flood of empty or
                        // tiny ones) once kept the window open for good.
                        window.moved(payload.count)
                        if let previous = held, let ending = try write(previous) { return ending }
                        if let previous = held { total += previous.count }
                        if UInt64(total + payload.count) > maxBytes {
                            return .tooLarge(limit: maxBytes, bytes: total)
                        }
                        held = payload
                    case .end:
                        if let previous = held {
                            if let ending = try write(previous) { return ending }
                            total += previous.count
                        }
                        return .finished(bytes: total)
                    case .statusOK, .statusFailed:
                        return .tampered(
                            TransferError(.tampered, "record \(opener.opened - 1) is a status, in the archive stream"),
                            bytes: total)
                    }
                }
                if start > 0 {
                    inbox.removeFirst(start)
                    start = 0
                }
                // More bytes from the peer: its waits are timed.
                if let idle = try window.wait(source, for: Int16(POLLIN), wake: wake, total: total) { return idle }
                let got = buffer.withUnsafeMutableBytes { recv(source, $0.baseAddress!, $0.count, Int32(MSG_DONTWAIT)) }
                if got < 0 {
                    if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { continue }
                    if errno == ECONNRESET { return .reset(bytes: total) }
                    return .failed(TransferSocket.failure("recv"), bytes: total)
                }
                if got == 0 { return .truncated(bytes: total) }
                inbox.append(contentsOf: buffer[..<got])
            }
        } catch let error as TransferError where error.code == .tampered {
            return .tampered(error, bytes: total)
            // cancellation: ended(by:) turns the wake-up of stop() into .stopped; the caller checks for cancellation
        } catch {
            return ended(by: error)
        }
    }

    /// Writes all of `bytes` to the destination; the waits are timed if the destination is the peer.
    private mutating func write(_ bytes: [UInt8]) throws -> Outcome {
        var done = 0
        while done < bytes.count {
            if peer == .destination {
                if let idle = try window.wait(destination, for: Int16(POLLOUT), wake: wake, total: total) { return idle }
            } else {
                // Waiting for our own engine is not the peer's time.
                window.pause()
                defer { window.resume() }
                _ = try TransferSocket.wait(destination, for: Int16(POLLOUT), until: nil, wake: wake)
            }
            let sent = bytes.withUnsafeBytes {
                send(destination, $0.baseAddress! + done, $0.count - done, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL))
            }
            if sent < 0 {
                if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { continue }
                if errno == EPIPE || errno == ECONNRESET {
                    guard peer == .destination else { return .localClosed(bytes: total) }
                    return errno == EPIPE ? .peerClosed(bytes: total) : .reset(bytes: total)
                }
                return .failed(TransferSocket.failure("send"), bytes: total)
            }
            done += sent
            if peer == .destination { window.moved(sent) }
        }
        return nil
    }

    /// The ending for an error thrown in a loop.
    private func ended(by error: any Error) -> TransferRelay.Ending {
        if let error = error as? TransferError { return .failed(error, bytes: total) }
        // A thread of our own, in no task: a CancellationError is only the wake-up of stop().
        if error is CancellationError { return .stopped(bytes: total) }
        return .failed(TransferError(.system(errno: 0), "sealing a record failed: \(error)"), bytes: total)
    }
}

/// The relay's idle rule: the time spent waiting for the peer since the last
/// ``TransferLimits/minimumProgress`` bytes went through must stay under the idle timeout.
///
/// On a receiver (`countsEveryMoment`) the peer's time is every moment but those spent waiting
/// for our own engine: a sender flooding records that carry no archive bytes never made the
/// receiver wait in `poll`, so only the waits counted, and the window never closed.
private struct IdleWindow {
    let length: Duration
    let minimum: Int
    let countsEveryMoment: Bool
    /// Time spent waiting for the peer in this window.
    var waited: Duration = .zero
    /// Bytes the peer moved in this window.
    var progress = 0
    /// With `countsEveryMoment`: since when the peer's time runs, nil while paused.
    var since: ContinuousClock.Instant?

    init(length: Duration, minimum: Int, countsEveryMoment: Bool = false) {
        self.length = length
        self.minimum = minimum
        self.countsEveryMoment = countsEveryMoment
        self.since = countsEveryMoment ? ContinuousClock.now : nil
    }

    /// Stops counting the peer's time (the relay waits for its own side).
    mutating func pause() {
        if let since { waited += ContinuousClock.now - since }
        since = nil
    }

    /// Counts the peer's time again.
    mutating func resume() {
        if countsEveryMoment { since = ContinuousClock.now }
    }

    /// Counts `bytes` the peer moved; enough of them start a new window.
    mutating func moved(_ bytes: Int) {
        progress += bytes
        if progress >= minimum {
            progress = 0
            waited = .zero
            if since != nil { since = ContinuousClock.now }
        }
    }

    /// Waits for the peer, for at most what is left of the window.
    /// - Returns: the ending if the window ran out first, nil once `fd` is ready.
    mutating func wait(_ fd: Int32, for events: Int16, wake: TransferWake, total: Int) throws -> TransferRelay.Ending? {
        // What passed since the last wait (opening records, say) is the peer's too; the wait
        // below counts itself, and the peer's time runs again once it is over.
        pause()
        defer { resume() }
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
