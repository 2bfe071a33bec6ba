/// The bookkeeping of a ``WorkerThreadPool`` as a value: its queue of jobs and what its threads
/// are doing. Each transition returns what the pool must do (run a job, wait, exit, wake
/// threads); the pool holds the value under its lock and carries the answers out, and the tests
/// drive it directly.
struct WorkQueue<Job> {
    /// What a thread does next.
    enum Next {
        /// Run this job (the oldest queued), then ask again.
        case run(Job)
        /// Nothing queued: wait for a wake-up, then ask again.
        case wait
        /// Shut down and nothing left: leave the loop.
        case exit
    }

    /// The threads the pool started.
    let threads: Int
    // A taken job's slot is cleared at once: its closure may hold a 16 MiB chunk, and keeping
    // spent closures until the array is compacted made peak memory grow with the input.
    private var jobs: [Job?] = []
    private var head = 0
    private(set) var isShuttingDown = false
    /// Threads waiting for a job.
    private(set) var waiting = 0
    /// Threads running a job.
    private(set) var running = 0
    /// Threads that have left their loop.
    private(set) var exited = 0

    init(threads: Int) {
        self.threads = threads
    }

    /// Jobs queued and not yet taken.
    var queued: Int { jobs.count - head }

    /// Whether every thread has left its loop.
    var allExited: Bool { exited == threads }

    /// Queues `job`; returns whether a waiting thread must be woken for it.
    mutating func submit(_ job: Job) -> Bool {
        jobs.append(job)
        return waiting > 0
    }

    /// A thread asks what to do. Jobs queued before a shutdown still run.
    mutating func next() -> Next {
        guard head < jobs.count else {
            if isShuttingDown {
                exited += 1
                return .exit
            }
            waiting += 1
            return .wait
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

    /// A waiting thread woke up.
    mutating func woke() {
        waiting -= 1
    }

    /// A thread finished its job.
    mutating func finished() {
        running -= 1
    }

    /// No more jobs will be taken once the queue is empty; returns whether to wake every thread
    /// (the waiting ones must see it).
    mutating func shutdown() -> Bool {
        isShuttingDown = true
        return waiting > 0
    }
}
