import Foundation
import Synchronization
import Testing

@testable import IndexedArchive

/// The threads of our own that CPU-heavy and blocking jobs run on.
@Suite struct WorkerThreadPoolTests {
    @Test func jobsRunOnThePoolsThreadsAndReturnTheirResults() async throws {
        let pool = WorkerThreadPool(threads: 2, name: "test-pool")
        defer { pool.shutdown() }
        let names = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<8 { group.addTask { try await pool.run { _ in Self.threadName() } } }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(names.count == 8)
        #expect(names.allSatisfy { $0.hasPrefix("test-pool-") }, "\(names)")
        #expect(Self.threadName().hasPrefix("test-pool-") == false)
        #expect(try await pool.run { _ in 6 * 7 } == 42)
    }

    /// The calling thread's name as the system keeps it (at most 15 bytes on Linux).
    static func threadName() -> String {
        let comm = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
        return comm.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func aJobsErrorReachesTheCaller() async throws {
        struct Failure: Error {}
        let pool = WorkerThreadPool(threads: 1, name: "test-pool")
        defer { pool.shutdown() }
        await #expect(throws: Failure.self) { try await pool.run { _ in throw Failure() } }
    }

    /// A long job sees the caller's cancellation through its flag and stops.
    @Test func cancellationReachesARunningJobThroughItsFlag() async throws {
        let pool = WorkerThreadPool(threads: 1, name: "test-pool")
        defer { pool.shutdown() }
        let started = Atomic<Bool>(false)
        let task = Task {
            try await pool.run { flag in
                started.store(true, ordering: .relaxed)
                while !flag.isCancelled { Thread.sleep(forTimeInterval: 0.001) }
                throw CancellationError()
            }
        }
        while !started.load(ordering: .relaxed) { try await Task.sleep(for: .milliseconds(1)) }
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
    }

    /// With `abandonOnCancel`, the caller is answered at once while a job stuck in a call keeps
    /// its thread; `discard` gets the result nobody takes.
    @Test func anAbandonedJobAnswersAtOnceAndItsResultIsDiscarded() async throws {
        let pool = WorkerThreadPool(threads: 1, name: "test-pool")
        defer { pool.shutdown() }
        let release = Atomic<Bool>(false)
        let started = Atomic<Bool>(false)
        let discarded = Mutex<Int?>(nil)
        let task = Task {
            try await pool.run(abandonOnCancel: true, discard: { value in discarded.withLock { $0 = value } }) { _ in
                started.store(true, ordering: .relaxed)
                // Deaf to cancellation, as a stuck system call is.
                while !release.load(ordering: .relaxed) { Thread.sleep(forTimeInterval: 0.001) }
                return 5
            }
        }
        while !started.load(ordering: .relaxed) { try await Task.sleep(for: .milliseconds(1)) }
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        release.store(true, ordering: .relaxed)
        for _ in 0..<2000 where discarded.withLock({ $0 }) == nil { try await Task.sleep(for: .milliseconds(1)) }
        #expect(discarded.withLock { $0 } == 5)
    }

    @Test func aJobCancelledBeforeItStartsDoesNotRun() async throws {
        let pool = WorkerThreadPool(threads: 1, name: "test-pool")
        defer { pool.shutdown() }
        let ran = Atomic<Bool>(false)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await pool.run { _ in ran.store(true, ordering: .relaxed) }
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        let didRun = ran.load(ordering: .relaxed)
        #expect(!didRun)
    }

    @Test func shutdownLetsQueuedJobsFinishThenTheThreadsExit() async throws {
        let pool = WorkerThreadPool(threads: 2, name: "test-pool")
        let done = Atomic<Int>(0)
        for _ in 0..<10 { pool.submit { done.add(1, ordering: .relaxed) } }
        pool.shutdown()
        #expect(await pool.awaitExit(timeout: .seconds(10)))
        let finished = done.load(ordering: .relaxed)
        #expect(finished == 10)
        #expect(pool.exitedThreads == 2)
    }

    /// A thread stuck in a job keeps the wait for the exit from ending (it answers `false` at its
    /// timeout, without hanging); once the job returns, the thread leaves and the next wait says so.
    @Test func aStuckJobHoldsTheExitUntilItReturns() async throws {
        let pool = WorkerThreadPool(threads: 2, name: "test-stuck")
        let release = Atomic(false)
        let started = Atomic(false)
        pool.submit {
            started.store(true, ordering: .releasing)
            while !release.load(ordering: .acquiring) { usleep(1000) }
        }
        while !started.load(ordering: .acquiring) { try await Task.sleep(for: .milliseconds(1)) }
        pool.shutdown()
        let whileStuck = await pool.awaitExit(timeout: .milliseconds(200))
        #expect(!whileStuck, "a thread is still in its job")
        #expect(pool.exitedThreads == 1, "the idle thread left at the shutdown")
        release.store(true, ordering: .releasing)
        let afterwards = await pool.awaitExit(timeout: .seconds(10))
        #expect(afterwards)
        #expect(pool.exitedThreads == 2)
    }

    /// A thread keeps its codecs between jobs (an encoder is 94 MiB of state at preset 6), one per
    /// setting, and never shares them with another thread.
    @Test func eachThreadKeepsItsOwnCodecsBetweenJobs() async throws {
        let pool = WorkerThreadPool(threads: 1, name: "test-codecs")
        defer { pool.shutdown() }
        let first = try await pool.runWithCodecs { _, codecs in
            ObjectIdentifier(try codecs.encoder(preset: 0, extreme: false, maxChunkSize: 4096))
        }
        let (again, other, count) = try await pool.runWithCodecs { _, codecs in
            let again = ObjectIdentifier(try codecs.encoder(preset: 0, extreme: false, maxChunkSize: 4096))
            let other = ObjectIdentifier(try codecs.encoder(preset: 1, extreme: false, maxChunkSize: 4096))
            _ = codecs.decoder(memoryLimit: 1 << 26)
            _ = codecs.decoder(memoryLimit: 1 << 26)
            return (again, other, codecs.count)
        }
        #expect(first == again, "the same thread reuses its encoder")
        #expect(first != other, "another preset gets an encoder of its own")
        #expect(count == 3, "two encoders and one decoder")

        let pair = WorkerThreadPool(threads: 2, name: "test-codecs-pair")
        defer { pair.shutdown() }
        // Both jobs hold their thread until the other has started, so they run on different threads.
        let started = StartCount()
        async let one = pair.runWithCodecs { _, codecs in
            started.arriveAndWait(for: 2)
            return ObjectIdentifier(codecs)
        }
        async let two = pair.runWithCodecs { _, codecs in
            started.arriveAndWait(for: 2)
            return ObjectIdentifier(codecs)
        }
        let (a, b) = try await (one, two)
        #expect(a != b, "each thread has its own")
    }
}

/// Jobs that count themselves in and wait until `count` have: two such jobs cannot share a thread.
/// `Sendable` through its atomic.
private final class StartCount: Sendable {
    private let arrived = Atomic<Int>(0)

    func arriveAndWait(for count: Int) {
        arrived.add(1, ordering: .relaxed)
        while arrived.load(ordering: .relaxed) < count { usleep(100) }
    }
}
