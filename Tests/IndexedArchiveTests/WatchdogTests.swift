import Foundation
@testable import IndexedArchive
import Synchronization
import Testing

/// Blocks the calling thread without end, as a read stuck in the kernel would.
func blockForever() -> Never {
    while true { usleep(50_000) }
}

@Suite struct WatchdogTests {
    static let fast = WatchdogPolicy(defaultStallTimeout: .milliseconds(200), gracePeriod: .milliseconds(300),
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
        #expect(elapsed >= .milliseconds(200))
        #expect(elapsed < .seconds(3))
    }

    @Test func beatingStageIsNotStalled() async throws {
        let value = try await Watchdog.supervise(policy: Self.fast) { watchdog in
            watchdog.begin(.compress)
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
            try await Task.sleep(for: .milliseconds(600))
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
        #expect(elapsed < .seconds(3), "answered in \(elapsed)")
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
        let pool = CompressorPool(workers: PackOptions.activeCores, preset: 6, extreme: false, chunkSize: 4 << 20, compressible: true)
        defer { pool.shutdown() }
        let data = sampleBytes(count: 4 << 20, seed: 9, text: true)
        let start = ContinuousClock.now
        let error = await #expect(throws: ArchiveError.self) {
            try await Watchdog.supervise(policy: Self.fast) { watchdog in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<PackOptions.activeCores {
                        group.addTask { _ = try await pool.compress(data) }
                    }
                    watchdog.begin(.write)  // a stage that will never progress
                    try await group.waitForAll()
                    try await Task.sleep(for: .seconds(30))
                }
            }
        }
        let elapsed = ContinuousClock.now - start
        #expect(error?.code == .stalled)
        #expect(elapsed < .seconds(2), "stall detected after \(elapsed) with every core busy")
    }
}
