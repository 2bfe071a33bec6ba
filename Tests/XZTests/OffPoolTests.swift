import Foundation
import Synchronization
import TestSupport
import Testing

/// `offPool`, the shared test support's way to run blocking work: here beside `ChildProcessTests`,
/// since TestSupport has no test target of its own.
@Suite struct OffPoolTests {
    @Test func theBodysValueAndErrorComeBack() async throws {
        #expect(try await offPool { 6 * 7 } == 42)
        await #expect(throws: CocoaError.self) {
            try await offPool { () throws -> Int in throw CocoaError(.fileNoSuchFile) }
        }
    }

    /// More blocked bodies than the cooperative pool has threads, released by a task on that pool:
    /// if the bodies held the pool's threads, nothing could release them and each would give up
    /// after its 10 s.
    @Test func blockedBodiesLeaveThePoolFree() async throws {
        let count = ProcessInfo.processInfo.activeProcessorCount * 2 + 1
        let started = Started()
        let release = DispatchSemaphore(value: 0)
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<count {
                group.addTask {
                    try await offPool {
                        started.count.add(1, ordering: .relaxed)
                        return release.wait(timeout: .now() + 10) == .success
                    }
                }
            }
            while started.count.load(ordering: .relaxed) < count { try await Task.sleep(for: .milliseconds(5)) }
            for _ in 0..<count { release.signal() }
            for try await released in group { #expect(released, "a body waited out its 10 s: the pool was held") }
        }
    }

    /// How many bodies have begun, for the task that releases them.
    final class Started: Sendable {
        let count = Atomic<Int>(0)
    }
}
