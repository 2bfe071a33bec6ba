/// The bookkeeping of a ``WorkerThreadPool`` as a value: its queue of jobs, the threads parked
/// for want of one, and who waits for the threads to exit. Each transition returns what the pool
/// must do (run a job, park, exit, wake whom); the pool holds the value in a `Mutex` and carries
/// the answers out after unlocking, and the tests drive it directly.
///
/// `Waker` is whatever wakes one parked thread or one exit waiter: the pool's are semaphores, the
/// tests' are names. A waker handed back is no longer held here, so each one is woken once.
struct WorkQueue<Job, Waker> {
    /// What a thread does next.
    enum Next {
        /// Run this job (the oldest queued), then ask again.
        case run(Job)
        /// Nothing queued: the thread's waker is parked; wait for it, then ask again.
        case park
        /// Shut down and nothing left: leave the loop, after waking `exitWaiters` (the waiters
        /// of ``awaitExit(_:)``, handed over by the last thread to leave).
        case exit(exitWaiters: [Waker])
    }

    /// The threads the pool started.
    let threads: Int
    // A taken job's slot is cleared at once: its closure may hold a 16 MiB chunk, and keeping
    // spent closures until the array is compacted made peak memory grow with the input.
    private var jobs: [Job?] = []
    private var head = 0
    private(set) var isShuttingDown = false
    /// The wakers of the threads parked for a job, the latest last.
    private var parked: [Waker] = []
    /// The wakers of those waiting for every thread to exit.
    private var exitWaiters: [Waker] = []
    /// Threads running a job.
    private(set) var running = 0
    /// Threads that have left their loop.
    private(set) var exited = 0

    init(threads: Int) {
        self.threads = threads
    }

    /// Jobs queued and not yet taken.
    var queued: Int { jobs.count - head }

    /// Threads parked for a job.
    var waiting: Int { parked.count }

    /// Whether every thread has left its loop.
    var allExited: Bool { exited == threads }

    /// Queues `job`; returns the waker of a parked thread to wake for it, if one is parked. The
    /// latest to park is chosen: its caches are the warmest.
    mutating func submit(_ job: Job) -> Waker? {
        jobs.append(job)
        return parked.popLast()
    }

    /// A thread, whose waker is `waker`, asks what to do. Jobs queued before a shutdown still run.
    mutating func next(parking waker: Waker) -> Next {
        guard head < jobs.count else {
            if isShuttingDown {
                exited += 1
                guard allExited else { return .exit(exitWaiters: []) }
                defer { exitWaiters.removeAll() }
                return .exit(exitWaiters: exitWaiters)
            }
            parked.append(waker)
            return .park
        }
        let job = jobs[head]!
        jobs[head] = nil
        head += 1
        if head == jobs.count {
            jobs.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 64 && head * 2 > jobs.count {
            jobs.removeFirst(head)
            head = 0
        }
        running += 1
        return .run(job)
    }

    /// A thread finished its job.
    mutating func finished() {
        running -= 1
    }

    /// No more jobs will be taken once the queue is empty; returns the parked threads' wakers:
    /// each must wake to see it.
    mutating func shutdown() -> [Waker] {
        isShuttingDown = true
        defer { parked.removeAll() }
        return parked
    }

    /// Someone waits, with `waker`, for every thread to exit; returns `false` (keeping nothing)
    /// when they all have already.
    mutating func awaitExit(_ waker: Waker) -> Bool {
        guard !allExited else { return false }
        exitWaiters.append(waker)
        return true
    }
}
