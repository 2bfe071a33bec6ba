import Foundation
@testable import IndexedArchive
import Synchronization
import Testing

/// Blocks the calling thread without end, as a read stuck in the kernel would.
func blockForever() -> Never {
    while true { usleep(50_000) }
}

final class Counter: Sendable {
    let value = Atomic<Int>(0)
}

@Suite struct WatchdogTests {
    // Bounds are generous: the tests must not fail because a shared machine is busy. What they
    // discriminate is the outcome (stalled, terminated, returned) and that the answer does not
    // wait for the stuck work.
    static let fast = WatchdogPolicy(defaultStallTimeout: .milliseconds(300), gracePeriod: .milliseconds(500),
                                     checkInterval: .milliseconds(10))

    @Test func silentActiveStageIsStalled() async throws {
        let start = ContinuousClock.now
        let error = await #expect(throws: ArchiveError.self) {
            try await Watchdog.supervise(policy: Self.fast) { watchdog in
                watchdog.begin(.read)
                try await Task.sleep(for: .seconds(30))
            }
        }
        let elapsed = ContinuousClock.now - start
        #expect(error?.code == .stalled)
        #expect(error?.message.contains("'read'") == true, "\(error?.message ?? "")")
        #expect(elapsed >= .milliseconds(300))
        #expect(elapsed < .seconds(10))
    }

    @Test func beatingStageIsNotStalled() async throws {
        let patient = WatchdogPolicy(defaultStallTimeout: .seconds(3), gracePeriod: .seconds(1))
        let value = try await Watchdog.supervise(policy: patient) { watchdog in
            watchdog.begin(.compress)
            // 20 beats 30 ms apart: 600 ms in all, far past no timeout between two beats.
            for _ in 0..<20 {
                try await Task.sleep(for: .milliseconds(30))
                watchdog.beat(.compress)
            }
            watchdog.end(.compress)
            return 42
        }
        #expect(value == 42)
    }

    @Test func idleStageIsNotStalledBackpressureIsNotAStall() async throws {
        // Nothing has begun: waiting (like a producer held back by busy compressors) is fine.
        let value = try await Watchdog.supervise(policy: Self.fast) { _ in
            try await Task.sleep(for: .milliseconds(900))
            return "done"
        }
        #expect(value == "done")
    }

    @Test func workThatIgnoresCancellationIsTerminatedOnTime() async throws {
        let start = ContinuousClock.now
        let error = await #expect(throws: ArchiveError.self) {
            try await Watchdog.supervise(policy: Self.fast) { watchdog in
                watchdog.begin(.extensionCode)
                // Blocks its thread for good, as a stuck system call would.
                blockForever()
            }
        }
        let elapsed = ContinuousClock.now - start
        #expect(error?.code == .terminated)
        #expect(error?.message.contains("extension") == true)
        #expect(elapsed < .seconds(10), "answered in \(elapsed)")
    }

    @Test func returningNormallyAfterCancellationIsTerminated() async throws {
        let error = await #expect(throws: ArchiveError.self) {
            try await Watchdog.supervise(policy: Self.fast) { watchdog in
                watchdog.begin(.extensionCode)
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
            try await Watchdog.supervise(policy: WatchdogPolicy()) { _ in
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
                    try await Task.sleep(for: .seconds(30))
                }
            }
        }
        let elapsed = ContinuousClock.now - start
        #expect(error?.code == .stalled)
        #expect(finished.value.load(ordering: .relaxed) == 0, "the stall waited for a compression to finish")
        #expect(elapsed < .seconds(5), "stall detected after \(elapsed) with every core busy")
    }
}
