import CPlatform
import Foundation
import Synchronization

/// A fixed set of threads of our own that run CPU-heavy or blocking jobs.
///
/// Swift's cooperative pool has one thread per core; a 16 MiB LZMA encode or a `read` stuck in the
/// kernel would take one of them for seconds or forever, and every task of the process (the
/// watchdog's verdict reaching the caller among them) would wait behind it. Jobs run here
/// instead, and a Swift task awaits the result.
///
/// The pool is owned by one operation (a pack, an extraction) and shut down when it ends; a job that
/// never returns leaves its thread behind, detached, rather than blocking the caller.
package final class WorkerThreadPool: Sendable {
    private typealias Job = @Sendable (WorkerCodecs) -> Void
    /// Every decision is the queue's (``WorkQueue``); the pool parks, wakes and runs as it says.
    /// A thread parks on a semaphore of its own, which a submit or the shutdown signals after
    /// taking it out of the queue: a signal before the wait is kept, so no wake-up is lost.
    private let state: Mutex<WorkQueue<Job, DispatchSemaphore>>
    /// How many threads the pool started.
    package let threadCount: Int
    /// A name for the threads, as `top -H` and debuggers show it.
    package let name: String

    package init(threads: Int, name: String) {
        precondition(threads > 0, "a pool needs at least one thread")
        self.state = Mutex(WorkQueue(threads: threads))
        self.threadCount = threads
        self.name = name
        for index in 0..<threads {
            let thread = Thread { [self] in self.workLoop(index: index) }
            thread.name = "\(name)-\(index)"
            thread.stackSize = 1 << 20
            thread.start()
        }
    }

    private func workLoop(index: Int) {
        amk_set_thread_name("\(name)-\(index)")
        // A write to a pipe or socket whose reader is gone raises SIGPIPE in the writing thread,
        // which by default kills the whole process. Blocked here, the write fails with EPIPE and
        // becomes an error the caller sees, and the process's own signal handling is untouched.
        var blocked = sigset_t()
        sigemptyset(&blocked)
        sigaddset(&blocked, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &blocked, nil)
        // This thread's codecs: only the jobs this loop runs see them, one at a time.
        let codecs = WorkerCodecs()
        let wakeUp = DispatchSemaphore(value: 0)
        var justFinished = false
        while true {
            let next = state.withLock { queue in
                if justFinished { queue.finished() }
                return queue.next(parking: wakeUp)
            }
            justFinished = false
            switch next {
            case .run(let job):
                job(codecs)
                justFinished = true
            case .park:
                wakeUp.wait()
            case .exit(let exitWaiters):
                for waiter in exitWaiters { waiter.signal() }
                return
            }
        }
    }

    /// Queues a job without waiting for it.
    package func submit(_ job: @escaping @Sendable () -> Void) {
        enqueue { _ in job() }
    }

    /// Queues a job that uses the codecs of the thread that runs it.
    private func enqueue(_ job: @escaping Job) {
        state.withLock { $0.submit(job) }?.signal()
    }

    /// Runs `body` on one of the pool's threads and returns its result.
    ///
    /// `body` receives a flag that turns true when the calling task is cancelled; long jobs poll it
    /// between slices and throw `CancellationError`. A job cancelled before it started is not run.
    ///
    /// With `abandonOnCancel`, cancellation answers the caller at once with `CancellationError`
    /// while the job, perhaps stuck in a system call, finishes on its own; `discard` then receives
    /// a result nobody will use (to close what it opened). Only jobs that share no state with the
    /// caller may be abandoned.
    package func run<T: Sendable>(
        abandonOnCancel: Bool = false,
        discard: (@Sendable (T) -> Void)? = nil,
        _ body: @escaping @Sendable (_ cancellation: CancellationFlag) throws -> T
    ) async throws -> T {
        try await runWithCodecs(abandonOnCancel: abandonOnCancel, discard: discard) { flag, _ in try body(flag) }
    }

    /// ``run(abandonOnCancel:discard:_:)`` for a job that encodes or decodes: `body` also receives
    /// the codecs its thread keeps between jobs (``WorkerCodecs``).
    package func runWithCodecs<T: Sendable>(
        abandonOnCancel: Bool = false,
        discard: (@Sendable (T) -> Void)? = nil,
        _ body: @escaping @Sendable (_ cancellation: CancellationFlag, _ codecs: WorkerCodecs) throws -> T
    ) async throws -> T {
        let flag = CancellationFlag()
        let slot = Mutex<CheckedContinuation<T, any Error>?>(nil)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                slot.withLock { $0 = continuation }
                if abandonOnCancel && flag.isCancelled {
                    slot.withLock { $0.take() }?.resume(throwing: CancellationError())
                    return
                }
                enqueue { codecs in
                    let result: Result<T, any Error> =
                        flag.isCancelled ? .failure(CancellationError()) : Result { try body(flag, codecs) }
                    if let waiting = slot.withLock({ $0.take() }) {
                        waiting.resume(with: result)
                    } else if case .success(let value) = result {
                        discard?(value)
                    }
                }
            }
        } onCancel: {
            flag.cancel()
            if abandonOnCancel {
                slot.withLock { $0.take() }?.resume(throwing: CancellationError())
            }
        }
    }

    /// Runs `body` on a thread of the pool and waits for it, even when the task is cancelled
    /// (``run(abandonOnCancel:discard:_:)`` skips a job whose task is cancelled): for the clean-up after a
    /// failure, which must happen whatever caused it.
    package func runRegardless(_ body: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            submit {
                body()
                continuation.resume()
            }
        }
    }

    /// Threads that have left their loop after `shutdown()`.
    package var exitedThreads: Int {
        state.withLock { $0.exited }
    }

    /// Lets the threads finish the queued jobs and exit. It does not wait: a thread stuck in a job
    /// that never returns is left behind.
    package func shutdown() {
        for parked in state.withLock({ $0.shutdown() }) { parked.signal() }
    }

    /// Waits until every thread has exited or `timeout` passes; returns whether they all did.
    /// Call it after ``shutdown()``.
    ///
    /// Teardown must not be skipped by cancellation, so this wait ignores it: it is bounded by
    /// `timeout` instead. It waits on a plain thread of its own, woken by the last thread to leave
    /// its loop, so it neither polls nor holds a thread of the cooperative pool.
    package func awaitExit(timeout: Duration) async -> Bool {
        let allExited = DispatchSemaphore(value: 0)
        guard state.withLock({ $0.awaitExit(allExited) }) else { return true }
        let deadline = DispatchTime.now() + timeout.secondsValue
        return await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let thread = Thread {
                continuation.resume(returning: allExited.wait(timeout: deadline) == .success)
            }
            thread.name = "\(name)-exit"
            thread.start()
        }
    }
}
