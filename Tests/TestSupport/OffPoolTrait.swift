import Dispatch
package import Testing

/// Runs each test of a suite outside Swift's cooperative pool: on the threads of `executor`,
/// preferred as the task executor of the test and of every child task it makes.
///
/// The pool has one thread per core (two here), and tests run in parallel on it. A test whose
/// synchronous body computes for seconds (generating a corpus, scanning the sources, checking
/// thousands of random blocks) holds one of those threads the whole time; two of them stalled
/// every other test for 20 to 30 s at the start of a run, and the tests that time a watchdog, a
/// FIFO's refusal or an extension's answer then failed. Suites of such tests take `.offPool`
/// (``OffPoolExecutor``: dispatch's threads), or `.background` when they compute for seconds and
/// time nothing (``BackgroundExecutor``: threads at a low priority, which leave the cores to the
/// rest). Tests that measure the pool itself must take neither.
package struct OffPoolTrait: SuiteTrait, TestTrait, TestScoping {
    /// Where the test's jobs run.
    package let executor: any TaskExecutor

    package var isRecursive: Bool { true }

    package func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        try await withTaskExecutorPreference(executor) { try await function() }
    }
}

extension Trait where Self == OffPoolTrait {
    /// Runs the suite's or test's body on dispatch's threads, outside the cooperative pool.
    package static var offPool: Self { OffPoolTrait(executor: OffPoolExecutor.shared) }

    /// Runs the suite's or test's body outside the cooperative pool at a low priority
    /// (``BackgroundExecutor``).
    package static var background: Self { OffPoolTrait(executor: BackgroundExecutor.shared) }
}

/// A task executor that runs each job on a serial dispatch queue of its own.
///
/// Serial queues are served by dispatch's overcommitting threads, which it adds when those it
/// has are busy. A concurrent queue would not do: it is served by the same global queue as the
/// cooperative pool, whose width is the number of cores (two tests blocking here starved the
/// pool for a minute). A task's jobs never run at once, so one queue per job keeps each task's
/// order.
package final class OffPoolExecutor: TaskExecutor {
    package static let shared = OffPoolExecutor()

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        DispatchQueue(label: "test-off-pool").async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
