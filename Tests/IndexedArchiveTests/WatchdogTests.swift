import Foundation
import Synchronization
import Testing

@testable import IndexedArchive

/// Never returns and ignores cancellation, as a read stuck in the kernel would; it suspends
/// rather than blocking, so the test process does not lose a thread of the cooperative pool.
func hangForever() async -> Never {
    await withCheckedContinuation { (_: CheckedContinuation<Void, Never>) in }
    fatalError("unreachable: the continuation is never resumed")
}

final class Counter: Sendable {
    let value = Atomic<Int>(0)
}

@Suite struct WatchdogTests {
    // Bounds are generous: the tests must not fail because a shared machine is busy, and other
    // suites running in parallel may hold every thread of the cooperative pool for seconds (work
    // that must stop after cancellation needs one of them to do so). What the tests discriminate
    // is the outcome (stalled, terminated, returned) and that the answer does not wait for work
    // that never ends. Timing-critical progress is reported from plain threads.
    /// A stage of the caller's own, as `Watchdog.supervise` users name theirs.
    static let ownWork = PipelineStage(rawValue: "own-work")

    static let fast = WatchdogPolicy(
        defaultStallTimeout: .milliseconds(300), gracePeriod: .seconds(20),
        checkInterval: .milliseconds(10))
    /// For work expected to ignore cancellation: the answer comes after the short grace.
    static let impatient = WatchdogPolicy(
        defaultStallTimeout: .milliseconds(300), gracePeriod: .milliseconds(500),
        checkInterval: .milliseconds(10))

    @Test func silentActiveStageIsStalled() async throws {
        let start = ContinuousClock.now
        let error = await #expect(throws: ArchiveError.self) {
            try await Watchdog.supervise(policy: Self.fast) { watchdog in
                watchdog.begin(.read)
                // The error is the test: a watchdog that did not fire lets this sleep end
                // normally. A loaded machine has delayed the answer by 25 s, so it is long.
                try await Task.sleep(for: .seconds(120))
            }
        }
        let elapsed = ContinuousClock.now - start
        #expect(error?.code == .stalled)
        #expect(error?.message.contains("'read'") == true, "\(error?.message ?? "")")
        #expect(elapsed >= .milliseconds(300))
    }

    @Test func beatingStageIsNotStalled() async throws {
        let value = try await Watchdog.supervise(policy: Self.fast) { watchdog in
            watchdog.begin(.compress)
            // A thread beats every 20 ms for 1.5 s, five times the timeout in all, as compression
            // threads do between slices.
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                Thread {
                    for _ in 0..<75 {
                        usleep(20_000)
                        watchdog.beat(.compress)
                    }
                    watchdog.end(.compress)
                    done.resume()
                }.start()
            }
            return 42
        }
        #expect(value == 42)
    }

    /// A probe the monitor asks on its own thread is a sign of life: a stage nobody beats
    /// lives for five timeouts while the probe says so, and stalls once it stops saying so.
    @Test func aProbeAskedOnTheMonitorsThreadKeepsAStageAlive() async throws {
        let threads = Mutex<Set<String>>([])
        let alive = Atomic(true)
        let start = ContinuousClock.now
        let error = await #expect(throws: ArchiveError.self) {
            try await Watchdog.supervise(policy: Self.fast) { watchdog in
                watchdog.begin(Self.ownWork)
                let probe = watchdog.addProbe(for: Self.ownWork) {
                    threads.withLock { _ = $0.insert(Thread.current.name ?? "") }
                    return alive.load(ordering: .relaxed)
                }
                defer { watchdog.removeProbe(probe) }
                try await Task.sleep(for: .milliseconds(1500))
                #expect(watchdog.stall == nil, "alive by its probe alone")
                alive.store(false, ordering: .relaxed)
                try await Task.sleep(for: .seconds(120))
            }
        }
        #expect(error?.code == .stalled)
        #expect(ContinuousClock.now - start >= .milliseconds(1800))
        #expect(threads.withLock { $0 } == ["amk-watchdog"], "asked by the monitor only")
    }

    @Test func idleStageIsNotStalledBackpressureIsNotAStall() async throws {
        // Nothing has begun: waiting (like a producer held back by busy compressors) is fine.
        let value = try await Watchdog.supervise(policy: Self.fast) { _ in
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                Thread {
                    usleep(900_000)
                    done.resume()
                }.start()
            }
            return "done"
        }
        #expect(value == "done")
    }

    @Test func aStuckJobIsCaughtWhileASiblingOfItsStageBeats() async throws {
        let error = await #expect(throws: ArchiveError.self) {
            try await Watchdog.supervise(policy: Self.fast) { watchdog in
                let stuck = watchdog.begin(.compress, job: "block 7")
                _ = stuck
                // A sibling beats every 20 ms for 20 s: with stage-level heartbeats the stuck job
                // would be hidden behind it.
                let healthy = watchdog.begin(.compress, job: "block 8")
                let stop = Atomic<Bool>(false)
                defer { stop.store(true, ordering: .relaxed) }
                let beater = Thread {
                    for _ in 0..<1000 where !stop.load(ordering: .relaxed) {
                        usleep(20_000)
                        watchdog.beat(healthy)
                    }
                }
                beater.start()
                try await Task.sleep(for: .seconds(20))
            }
        }
        #expect(error?.code == .stalled)
        #expect(error?.message.contains("stage 'compress' (block 7)") == true, "\(error?.message ?? "")")
    }

    @Test func anEndedJobIsNoLongerTimed() async throws {
        let value = try await Watchdog.supervise(policy: Self.fast) { watchdog in
            let job = watchdog.begin(.read, job: "a.txt")
            watchdog.end(job)
            // Three timeouts with no job running.
            try await Task.sleep(for: .milliseconds(900))
            return 1
        }
        #expect(value == 1)
    }

    @Test func workThatIgnoresCancellationIsTerminatedOnTime() async throws {
        let start = ContinuousClock.now
        let error = await #expect(throws: ArchiveError.self) {
            try await Watchdog.supervise(policy: Self.impatient) { watchdog in
                watchdog.begin(Self.ownWork)
                // Never returns, whatever cancellation says.
                await hangForever()
            }
        }
        let elapsed = ContinuousClock.now - start
        #expect(error?.code == .terminated)
        #expect(error?.message.contains("own-work") == true)
        #expect(elapsed < .seconds(120), "answered in \(elapsed), not never")
    }

    @Test func returningNormallyAfterCancellationIsTerminated() async throws {
        let error = await #expect(throws: ArchiveError.self) {
            try await Watchdog.supervise(policy: Self.fast) { watchdog in
                watchdog.begin(Self.ownWork)
                // Swallows the cancellation and returns as if all went well.
                try? await Task.sleep(for: .seconds(30))
                return 1
            }
        }
        #expect(error?.code == .terminated)
        #expect(error?.message.contains("returned") == true)
    }

    @Test func callerCancellationPropagates() async throws {
        let task = Task {
            try await Watchdog.supervise(policy: WatchdogPolicy(gracePeriod: .seconds(20))) { _ in
                try await Task.sleep(for: .seconds(30))
            }
        }
        try await Task.sleep(for: .milliseconds(50))
        task.cancel()
        let result = await task.result
        #expect(throws: CancellationError.self) { try result.get() }
    }

    @Test func firesOnTimeWhileEveryCoreCompresses() async throws {
        // Saturate every core with compression on threads of our own, as a pack does.
        // 16 MiB at preset 6 takes seconds per core; the stall must be reported long before any
        // of those compressions ends.
        let pool = CompressorPool(workers: PackOptions.activeCores, preset: 6, extreme: false, chunkSize: 16 << 20, compressible: true)
        defer { pool.shutdown() }
        let data = sampleBytes(count: 16 << 20, seed: 9, text: true)
        let finished = Counter()
        let start = ContinuousClock.now
        let error = await #expect(throws: ArchiveError.self) {
            try await Watchdog.supervise(policy: Self.fast) { watchdog in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<PackOptions.activeCores {
                        group.addTask {
                            _ = try await pool.compress(data)
                            finished.value.add(1, ordering: .relaxed)
                        }
                    }
                    watchdog.begin(.write)  // a stage that will never progress
                    try await group.waitForAll()
                    try await Task.sleep(for: .seconds(120))
                }
            }
        }
        let elapsed = ContinuousClock.now - start
        #expect(error?.code == .stalled)
        #expect(finished.value.load(ordering: .relaxed) == 0, "the stall waited for a compression to finish")
        #expect(elapsed < .seconds(120), "stall reported after \(elapsed) with every core busy")
    }
}
