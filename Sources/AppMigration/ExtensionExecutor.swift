import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Runs an extension's code on a dispatch queue of its own instead of Swift's cooperative pool.
///
/// The pool has one thread per core. An extension that blocks its thread (a read stuck in the
/// kernel, a semaphore that never signals) would take one of them for good; two such extensions on
/// a two-core machine would leave none to deliver the watchdog's verdict to the caller. A dispatch
/// queue's thread is not the pool's, and Dispatch starts another when one blocks, so the host keeps
/// running whatever the extension does.
///
/// It also counts the CPU time the extension's code uses (``cpuNanoseconds()``), the import's sign
/// of life when its progress says nothing.
///
/// `Sendable`: it holds the queue, which is, and the CPU account in a `Mutex`.
final class ExtensionExecutor: TaskExecutor {
    private let queue: DispatchQueue

    /// CPU time of the jobs that finished, and the clock and first reading of the running one.
    private struct CPUAccount {
        var finished: Int64 = 0
        var running: (clock: clockid_t, start: Int64)?
    }

    private let account = Mutex(CPUAccount())

    init(name: String) {
        queue = DispatchQueue(label: "amk-extension-\(name)")
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async {
            self.jobStarts()
            job.runSynchronously(on: self.asUnownedTaskExecutor())
            self.jobEnds()
        }
    }

    /// CPU nanoseconds (user and system) the extension's code has used on this executor so far,
    /// including the job running now (on Linux; elsewhere the running job counts once it ends).
    func cpuNanoseconds() -> Int64 {
        account.withLock { account in
            #if os(Linux)
                // The running job's thread is alive while `running` is set: it clears it, under this
                // lock, before it moves on.
                guard let running = account.running else { return account.finished }
                return account.finished + max(0, Self.reading(of: running.clock) - running.start)
            #else
                return account.finished
            #endif
        }
    }

    private func jobStarts() {
        let clock = Self.currentThreadClock()
        let start = Self.reading(of: clock)
        account.withLock { $0.running = (clock, start) }
    }

    private func jobEnds() {
        account.withLock { account in
            if let running = account.running {
                account.finished += max(0, Self.reading(of: running.clock) - running.start)
            }
            account.running = nil
        }
    }

    /// The CPU-time clock of the calling thread, readable from other threads where the system
    /// allows it.
    private static func currentThreadClock() -> clockid_t {
        #if os(Linux)
            var clock = clockid_t()
            if pthread_getcpuclockid(pthread_self(), &clock) == 0 { return clock }
        #endif
        return CLOCK_THREAD_CPUTIME_ID
    }

    /// A CPU-time clock's reading in nanoseconds (0 if it cannot be read); the extension
    /// runtime reads the process's and its own threads' clocks with it too.
    static func reading(of clock: clockid_t) -> Int64 {
        var time = timespec()
        guard clock_gettime(clock, &time) == 0 else { return 0 }
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }
}
