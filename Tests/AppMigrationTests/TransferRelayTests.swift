import Crypto
import Foundation
import Synchronization
import TestSupport
import Testing
import TransferTestSupport

@testable import AppMigration

/// Tests `TransferRelay.swift`: the idle rule and the records, on local socket pairs (a "peer"
/// end the test writes sealed records to, and an "engine" end it reads plain bytes from).
@Suite struct TransferRelayTests {
    /// A relay from a peer to an engine end, with `idle` and `minimum`; the test gets the peer's
    /// writing end and the engine's reading end (both closed by the caller).
    static func receiving(idle: Duration, minimum: Int, maxBytes: UInt64 = .max)
        throws -> (relay: TransferRelay, peer: Int32, engine: Int32, close: () -> Void)
    {
        let (peer, relaySource) = try TransferSocket.socketPair()
        let (engine, relayDestination) = try TransferSocket.socketPair()
        var limits = TransferLimits()
        limits.idle = idle
        limits.minimumProgress = minimum
        let relay = try TransferRelay(
            from: relaySource, to: relayDestination, codec: .open(RecordOpener(key: key), maxBytes: maxBytes),
            limits: limits, owning: relayDestination, name: "test-relay")
        return (
            relay, peer, engine,
            {
                close(peer)
                close(engine)
                close(relaySource)
            }
        )
    }

    /// The key of the test's records.
    static let key = SymmetricKey(size: .bits256)

    /// Seals `count` pieces of `size` bytes (in records of at most 64 KiB), sending one piece every
    /// `interval`, then the end record (unless `end` is false), then half-closes; on a thread,
    /// which the returned ``Pacer`` stops.
    static func pace(
        _ fd: Int32, pieces count: Int, of size: Int, every interval: Duration, end: Bool = true,
        alter: (@Sendable (inout [UInt8], Int) -> Void)? = nil
    ) -> Pacer {
        let sealer = RecordSealer(key: key)
        let pacer = Pacer(fd)
        let thread = Thread {
            defer { pacer.finished.signal() }
            var index = 0
            for _ in 0..<count {
                let seconds = Double(interval.components.attoseconds) / 1e18 + Double(interval.components.seconds)
                if pacer.wake.wait(timeout: .now() + seconds) == .success { return }
                var left = size
                while left > 0 {
                    let piece = min(left, SecureChannel.maxPayload)
                    var record = try! sealer.seal(.data, [UInt8](repeating: 7, count: piece))
                    alter?(&record, index)
                    index += 1
                    guard !pacer.isStopped, sendAll(fd, record) else { return }
                    left -= piece
                }
            }
            guard !pacer.isStopped else { return }
            if end { _ = sendAll(fd, try! sealer.seal(.end)) }
            shutdown(fd, Int32(SHUT_WR))
        }
        thread.start()
        return pacer
    }

    /// The thread of ``pace(_:pieces:of:every:end:alter:)``. A test stops it before it closes the
    /// descriptor the thread writes to: a thread left pacing would write its records to whatever
    /// socket next gets that number, in this process of many suites (an extension's channel, once,
    /// which then exited on the garbage).
    final class Pacer: Sendable {
        /// Signalled by ``stop()``, to cut a wait short.
        let wake = DispatchSemaphore(value: 0)
        /// Signalled by the thread as it ends.
        let finished = DispatchSemaphore(value: 0)
        private let stopped = Atomic<Bool>(false)
        private let fd: Int32

        init(_ fd: Int32) {
            self.fd = fd
        }

        var isStopped: Bool { stopped.load(ordering: .sequentiallyConsistent) }

        /// Stops the thread and waits until it has ended; a send it is blocked in (the relay no
        /// longer reads) fails at once, as the descriptor is shut down for writing.
        func stop() {
            stopped.store(true, ordering: .sequentiallyConsistent)
            shutdown(fd, Int32(SHUT_WR))
            wake.signal()
            finished.wait()
        }
    }

    /// Reads everything from `fd` on a thread, after waiting `delay`; the count arrives in `box`.
    static func consume(_ fd: Int32, after delay: Double = 0, into box: Box<Int?>) {
        let thread = Thread {
            Thread.sleep(forTimeInterval: delay)
            var total = 0
            var buffer = [UInt8](repeating: 0, count: 64 << 10)
            while true {
                let got = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
                if got <= 0 { break }
                total += got
            }
            box.current = total
        }
        thread.start()
    }

    /// 100 bytes every 100 ms is 1,000 bytes per 1 s window, under the 5,000 required: idle,
    /// although bytes arrive ten times a window.
    @Test func aPeerBelowTheMinimumIsIdleAfterOneWindow() async throws {
        let (relay, peer, engine, closeAll) = try Self.receiving(idle: .seconds(1), minimum: 5000)
        defer { closeAll() }
        let received = Box<Int?>(nil)
        Self.consume(engine, into: received)
        let start = ContinuousClock.now
        // A minute of trickling, so a busy machine (12 s was seen beside a release pack) cannot
        // make the trickle end before the idle window is judged.
        let pacer = Self.pace(peer, pieces: 600, of: 100, every: .milliseconds(100))
        defer { pacer.stop() }
        let ending = await relay.ending()
        let elapsed = ContinuousClock.now - start
        guard case .idle(let window, let moved, let bytes) = ending else {
            Issue.record("not idle: \(ending)")
            return
        }
        #expect(window == .seconds(1))
        #expect(moved < 5000, "\(moved) in the window, \(bytes) in all")
        #expect(elapsed >= .seconds(1) && elapsed < .seconds(40), "\(elapsed)")
        #expect(try await eventually { received.current == bytes }, "the engine's end is closed after what went through")
    }

    /// A peer flooding records that carry no archive bytes (empty data records, as fast as it
    /// can) never made the relay wait in `poll`, and its framing counted as progress: it held the
    /// receiver, and the container's lock, for good. Only archive bytes are progress, and every
    /// moment but our own engine's is the peer's: idle after one window.
    @Test func aFloodOfEmptyRecordsIsIdle() async throws {
        let (relay, peer, engine, closeAll) = try Self.receiving(idle: .seconds(1), minimum: 5000)
        defer { closeAll() }
        let received = Box<Int?>(nil)
        Self.consume(engine, into: received)
        let pacer = Pacer(peer)
        let thread = Thread {
            defer { pacer.finished.signal() }
            let sealer = RecordSealer(key: Self.key)
            let deadline = ContinuousClock.now + .seconds(60)
            while !pacer.isStopped, ContinuousClock.now < deadline {
                guard sendAll(peer, try! sealer.seal(.data, [])) else { return }
            }
        }
        thread.start()
        defer { pacer.stop() }
        let start = ContinuousClock.now
        let ending = await relay.ending()
        guard case .idle(_, let moved, _) = ending else {
            Issue.record("not idle: \(ending)")
            return
        }
        #expect(moved == 0, "empty records move no archive bytes")
        #expect(ContinuousClock.now - start < .seconds(40), "judged within the flood")
    }

    /// 5,000 bytes every 100 ms keeps starting new windows of 1 s: the slow peer is not idle.
    @Test func aSlowPeerAtTheMinimumIsNotIdle() async throws {
        let (relay, peer, engine, closeAll) = try Self.receiving(idle: .seconds(1), minimum: 5000)
        defer { closeAll() }
        let received = Box<Int?>(nil)
        Self.consume(engine, into: received)
        let pacer = Self.pace(peer, pieces: 10, of: 5000, every: .milliseconds(100))
        defer { pacer.stop() }
        let ending = await relay.ending()
        guard case .finished(bytes: 50_000) = ending else {
            Issue.record("not finished: \(ending)")
            return
        }
        #expect(try await eventually { received.current == 50_000 })
    }

    /// Time spent waiting for our own engine is not the peer's: an engine that reads nothing for
    /// 4 s, with a 1.5 s idle window, does not make the peer idle. (With a 0.5 s window, a loaded
    /// CI machine once started the peer's thread too late for its first record to arrive within
    /// the window, and the relay rightly called that peer idle.)
    @Test func waitingForOurOwnSideIsNotThePeersIdleness() async throws {
        let (relay, peer, engine, closeAll) = try Self.receiving(idle: .milliseconds(1500), minimum: 64 << 10)
        defer { closeAll() }
        let received = Box<Int?>(nil)
        Self.consume(engine, after: 4, into: received)
        let pacer = Self.pace(peer, pieces: 1, of: 4 << 20, every: .zero)
        defer { pacer.stop() }
        let ending = await relay.ending()
        guard case .finished(bytes: 4 << 20) = ending else {
            Issue.record("not finished: \(ending)")
            return
        }
        #expect(try await eventually { received.current == 4 << 20 })
    }

    /// stop() ends a relay waiting for a silent peer at once, and closes the engine's end.
    @Test func stopEndsTheRelayAtOnce() async throws {
        let (relay, _, engine, closeAll) = try Self.receiving(idle: .seconds(60), minimum: 1)
        defer { closeAll() }
        let received = Box<Int?>(nil)
        Self.consume(engine, into: received)
        try await Task.sleep(for: .milliseconds(100))
        let start = ContinuousClock.now
        relay.stop()
        guard case .stopped(bytes: 0) = await relay.ending() else {
            Issue.record("not stopped")
            return
        }
        #expect(ContinuousClock.now - start < .seconds(5))
        #expect(try await eventually { received.current == 0 })
    }

    /// Each data record reaches the engine only once the next record has checked out: without
    /// the end record, the last one never does, so a stream cut exactly after a record cannot
    /// complete an archive.
    @Test func withoutTheEndRecordTheLastRecordIsHeldBack() async throws {
        let (relay, peer, engine, closeAll) = try Self.receiving(idle: .seconds(30), minimum: 1)
        defer { closeAll() }
        let received = Box<Int?>(nil)
        Self.consume(engine, into: received)
        let pacer = Self.pace(peer, pieces: 3, of: 1000, every: .zero, end: false)
        defer { pacer.stop() }
        guard case .truncated(bytes: 2000) = await relay.ending() else {
            Issue.record("not truncated")
            return
        }
        #expect(try await eventually { received.current == 2000 })
    }

    /// A record with one bit flipped fails authentication: the relay ends, naming the record, and
    /// the engine gets only what came before the record before it.
    @Test func anAlteredRecordEndsTheRelayAsTampered() async throws {
        let (relay, peer, engine, closeAll) = try Self.receiving(idle: .seconds(30), minimum: 1)
        defer { closeAll() }
        let received = Box<Int?>(nil)
        Self.consume(engine, into: received)
        let pacer = Self.pace(peer, pieces: 5, of: 1000, every: .zero) { record, index in
            if index == 3 { record[20] ^= 0x01 }
        }
        defer { pacer.stop() }
        guard case .tampered(let error, bytes: 2000) = await relay.ending() else {
            Issue.record("not tampered")
            return
        }
        #expect(error.message.hasPrefix("record 3 failed authentication"), "\(error)")
        #expect(try await eventually { received.current == 2000 })
    }

    /// A stream over the receiver's limit is cut off before the limit is passed on.
    @Test func aStreamOverTheLimitIsCutOff() async throws {
        let (relay, peer, engine, closeAll) = try Self.receiving(idle: .seconds(30), minimum: 1, maxBytes: 2500)
        defer { closeAll() }
        let received = Box<Int?>(nil)
        Self.consume(engine, into: received)
        let pacer = Self.pace(peer, pieces: 5, of: 1000, every: .zero)
        defer { pacer.stop() }
        guard case .tooLarge(limit: 2500, bytes: 2000) = await relay.ending() else {
            Issue.record("not cut off")
            return
        }
        #expect(try await eventually { received.current == 2000 })
    }
}
