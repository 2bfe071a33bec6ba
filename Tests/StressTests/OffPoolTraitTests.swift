import Foundation
import TestSupport
import Testing

/// ``OffPoolTrait``: what a test under it does with its thread does not take one from the pool.
@Suite(.offPool) struct OffPoolTraitTests {
    /// More tasks than the pool has threads, each blocking its thread until all have arrived: on
    /// the cooperative pool (one thread per core) the last ones never start, so they never meet.
    @Test func moreBlockedTasksThanCoresAllRun() async throws {
        let count = ProcessInfo.processInfo.activeProcessorCount + 2
        #expect(try await blockedTasksAllMeet(count: count), "\(count) tasks blocking at once did not all run")
    }
}
