import Foundation
import TestSupport
import Testing

/// ``OffPoolTrait``: what a test under it does with its thread does not take one from the pool.
@Suite(.offPool) struct OffPoolTraitTests {
    /// More tasks than the pool has threads, each blocking its thread until all have arrived: on
    /// the cooperative pool (one thread per core) the last ones never start, so they never meet.
    @Test func moreBlockedTasksThanCoresAllRun() async throws {
        let count = ProcessInfo.processInfo.activeProcessorCount + 2
        let arrived = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let met = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<count {
                group.addTask {
                    arrived.signal()
                    return release.wait(timeout: .now() + 45) == .success
                }
            }
            // Off the group's executor too: this thread waits for all of them.
            let deadline = DispatchTime.now() + 30
            var everyone = true
            for _ in 0..<count where arrived.wait(timeout: deadline) == .timedOut { everyone = false }
            for _ in 0..<count { release.signal() }
            var released = 0
            for try await ok in group where ok { released += 1 }
            return everyone && released == count
        }
        #expect(met, "\(count) tasks blocking at once did not all run")
    }
}
