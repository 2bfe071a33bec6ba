import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A task executor whose threads run at ``niceness``, and which starts another thread whenever a
/// job comes and none is idle; a thread idle for ``idleLifetime`` ends.
///
/// What `.background` (``OffPoolTrait``) runs tests on. ``OffPoolExecutor`` frees the pool's
/// threads, but not the cores: at the start of a run the suites that generate corpora and encode
/// thousands of blocks ran on a dozen threads at once, the two threads of the pool had a sixth of
/// the machine, and tests that time a watchdog, an extension or a peer waited 5 s (13 s in CI)
/// for their code to run and failed as stalled. At nice 10, a tenth of the weight of a normal
/// thread, those suites still have the cores the rest leaves idle.
///
/// Its threads cannot be dispatch's: those are shared with the rest of the process, and a thread
/// lowered for one job could not be raised again for the next without privileges. Growing on
/// demand, as dispatch's overcommitting threads do, is what lets tests block a thread while they
/// wait for another of their tasks (``OffPoolExecutor`` says why a fixed width starved them).
///
/// `@unchecked Sendable`: `jobs`, `next`, `idle`, `wakeUps` and `live` are only touched with
/// `condition` locked.
package final class BackgroundExecutor: TaskExecutor, @unchecked Sendable {
    package static let shared = BackgroundExecutor()

    /// The nice value of every thread of the executor: 10 more than the process's own, at most
    /// 19 (set once, so that a thread started from one of ours is not lowered twice).
    package let niceness: Int32

    package init() {
        #if canImport(Glibc)
            // The process's value is its main thread's.
            niceness = min(getpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(getpid())) + 10, 19)
        #else
            niceness = 10
        #endif
    }

    /// How long a thread waits for a job before it ends. Threads are not kept for good: each one
    /// that waited for a child process holds a run loop's three descriptors, and a suite that
    /// counts the process's descriptors saw them grow by a dozen.
    package static let idleLifetime: Double = 2

    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var next = 0
    /// Threads waiting for a job.
    private var idle = 0
    /// Idle threads already woken for a job, and not yet up.
    private var wakeUps = 0
    /// Threads started and not ended.
    private var live = 0

    /// How many threads the executor has now, busy or idle.
    package var threadCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return live
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        if idle > wakeUps {
            wakeUps += 1
            condition.signal()
            condition.unlock()
            return
        }
        live += 1
        condition.unlock()
        let thread = Thread { [self] in work() }
        thread.name = "test-background"
        thread.start()
    }

    private func work() {
        #if canImport(Glibc)
            // Linux keeps a nice value per thread, and "0" names the calling one (not the
            // process, as POSIX would have it); threads started from here inherit it.
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, niceness)
        #endif
        condition.lock()
        while true {
            if next < jobs.count {
                let job = jobs[next]
                next += 1
                if next == jobs.count {
                    jobs.removeAll(keepingCapacity: true)
                    next = 0
                }
                condition.unlock()
                job.runSynchronously(on: asUnownedTaskExecutor())
                condition.lock()
                continue
            }
            idle += 1
            var timedOut = false
            repeat {
                timedOut = !condition.wait(until: Date(timeIntervalSinceNow: Self.idleLifetime))
            } while wakeUps == 0 && next == jobs.count && !timedOut
            idle -= 1
            if wakeUps > 0 {
                wakeUps -= 1
            } else if next == jobs.count {
                live -= 1
                condition.unlock()
                return
            }
        }
    }
}
