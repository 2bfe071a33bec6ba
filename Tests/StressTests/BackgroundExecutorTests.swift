import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// ``BackgroundExecutor`` (`.background`): a test on it runs at a low priority, and blocking its thread takes
/// none from the pool nor from the test's other tasks.
@Suite(.background) struct BackgroundExecutorTests {
    #if canImport(Glibc)
        /// The nice value of the calling thread: on Linux, "0" names the thread, not the process.
        static func niceness() -> Int32 {
            errno = 0
            return getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        }

        @Test func theBodyAndItsChildTasksRunLowered() async throws {
            let lowered = BackgroundExecutor.shared.niceness
            #expect(Self.niceness() == lowered)
            let children = await withTaskGroup(of: Int32.self) { group in
                for _ in 0..<4 { group.addTask { Self.niceness() } }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(children == Array(repeating: lowered, count: 4))
            // Back on the pool, a task runs at the process's own priority.
            let detached = await Task.detached { Self.niceness() }.value
            #expect(detached < lowered || lowered == 19, "a thread of the pool runs at \(detached), as ours do")
        }
    #endif

    /// More tasks than cores, each blocking its thread until all have arrived: with a fixed
    /// number of threads the last ones would never start, and none would meet.
    @Test func moreBlockedTasksThanCoresAllRun() async throws {
        let count = ProcessInfo.processInfo.activeProcessorCount + 6
        #expect(try await blockedTasksAllMeet(count: count), "\(count) tasks blocking at once did not all run")
    }

    /// Threads started for a crowd of blocked tasks end once idle, with what they hold.
    @Test func idleThreadsEnd() async throws {
        let executor = BackgroundExecutor()
        let count = 12
        let arrived = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        try await withTaskExecutorPreference(executor) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<count {
                    group.addTask {
                        arrived.signal()
                        _ = release.wait(timeout: .now() + 45)
                    }
                }
                for _ in 0..<count { _ = arrived.wait(timeout: .now() + 30) }
                #expect(executor.threadCount >= count)
                for _ in 0..<count { release.signal() }
                try await group.waitForAll()
            }
        }
        let deadline = ContinuousClock.now + .seconds(BackgroundExecutor.idleLifetime * 10)
        while executor.threadCount > 0 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(executor.threadCount == 0, "\(executor.threadCount) threads stayed")
    }

    /// Many short jobs, as a test's awaits make them: each runs once, none is lost.
    @Test func everyJobRunsOnce() async {
        let total = await withTaskGroup(of: Int.self) { group in
            for value in 1...2000 {
                group.addTask {
                    await Task.yield()
                    return value
                }
            }
            return await group.reduce(0, +)
        }
        #expect(total == 2000 * 2001 / 2)
    }
}
