/// What a ``Watchdog`` knows, as a value: the stages and jobs it times, the stall it found, and
/// where the supervised work is on the ladder (running, cancelled, finished, committed).
///
/// Every transition takes the time it happens at and returns what the watchdog must do, so the
/// whole ladder is decided here and tested without a clock or a thread; the ``Watchdog`` holds it
/// under a lock, feeds it the time, and carries the answers out.
struct WatchdogState {
    struct Stage {
        var active = 0
        var lastProgress: ContinuousClock.Instant
    }

    struct Job {
        var label: String
        var lastProgress: ContinuousClock.Instant
    }

    /// What the monitor does after a look.
    enum MonitorAction: Equatable {
        /// Nothing to do yet: look again after the interval.
        case wait
        /// A stall was found: cancel the work, and give it the grace period from now.
        case cancel(StallReport)
        /// The work was cancelled and did not stop within the grace period: answer the caller
        /// with this reason and leave the work behind.
        case terminate(String)
        /// The work finished or the caller has its answer: the monitor ends.
        case stop
    }

    private(set) var stages: [PipelineStage: Stage] = [:]
    private(set) var jobs: [WatchdogJob: Job] = [:]
    private var nextJob: UInt64 = 0
    /// The first stall found; it never changes after.
    private(set) var stall: StallReport?
    /// When the work was cancelled (by a stall or by the caller).
    private(set) var cancelledAt: ContinuousClock.Instant?
    /// The work returned.
    private(set) var finished = false
    /// The work passed its point of no return.
    private(set) var committed = false
    /// When the monitor last looked.
    private var lastLook: ContinuousClock.Instant?

    /// A monitor late by more than this past its interval was not running at all: the process was
    /// stopped (Ctrl-Z, SIGSTOP) or the machine slept. Busy cores delay a thread by milliseconds.
    static let suspension: Duration = .seconds(1)

    // MARK: - Heartbeats

    /// The stage has work to do from `now` on; its silence counts from here.
    mutating func begin(_ stage: PipelineStage, at now: ContinuousClock.Instant) {
        var entry = stages[stage] ?? Stage(lastProgress: now)
        if entry.active == 0 { entry.lastProgress = now }
        entry.active += 1
        stages[stage] = entry
    }

    /// The stage finished a piece of work at `now`.
    mutating func end(_ stage: PipelineStage, at now: ContinuousClock.Instant) {
        guard var entry = stages[stage] else { return }
        entry.active = max(0, entry.active - 1)
        entry.lastProgress = now
        stages[stage] = entry
    }

    /// The stage made progress at `now`.
    mutating func beat(_ stage: PipelineStage, at now: ContinuousClock.Instant) {
        stages[stage, default: Stage(lastProgress: now)].lastProgress = now
    }

    /// A job of `stage` named `label` starts at `now`.
    mutating func beginJob(_ stage: PipelineStage, label: String, at now: ContinuousClock.Instant) -> WatchdogJob {
        let job = WatchdogJob(id: nextJob, stage: stage)
        nextJob += 1
        jobs[job] = Job(label: label, lastProgress: now)
        return job
    }

    /// The job made progress at `now`: its deadline starts again.
    mutating func beat(_ job: WatchdogJob, at now: ContinuousClock.Instant) {
        jobs[job]?.lastProgress = now
    }

    /// The job is over, finished or failed.
    mutating func end(_ job: WatchdogJob) {
        jobs[job] = nil
    }

    // MARK: - The ladder

    /// Whether the work may pass its point of no return: not once it has been cancelled.
    mutating func commit() -> Bool {
        guard cancelledAt == nil else { return false }
        committed = true
        return true
    }

    /// The caller cancelled at `now` (a later cancellation keeps the first time).
    mutating func cancel(at now: ContinuousClock.Instant) {
        if cancelledAt == nil { cancelledAt = now }
    }

    /// The work returned.
    mutating func finish() {
        finished = true
    }

    /// Checks every stage and job at `now`; records and returns the first stall found.
    ///
    /// A stage stalls when it has work and has been silent for its timeout; a stage without work
    /// (a producer waiting for a free compressor) never does, since backpressure is not a stall.
    /// The engine's stages are checked in their order, then the callers' by name, so that of two
    /// stages stalled at once the report always names the same one; then the jobs, and the one
    /// silent longest past its deadline is named.
    mutating func check(at now: ContinuousClock.Instant, policy: WatchdogPolicy) -> StallReport? {
        if let stall { return stall }
        let callers = stages.keys.filter { !PipelineStage.engineStages.contains($0) }.sorted { $0.rawValue < $1.rawValue }
        for stage in PipelineStage.engineStages + callers {
            guard let entry = stages[stage], entry.active > 0 else { continue }
            let silent = now - entry.lastProgress
            let timeout = policy.timeout(for: stage)
            if silent >= timeout {
                stall = StallReport(stage: stage, silentFor: silent, timeout: timeout)
                return stall
            }
        }
        var worstExcess = Duration.zero
        for (job, entry) in jobs {
            let silent = now - entry.lastProgress
            let timeout = policy.timeout(for: job.stage)
            guard silent >= timeout, stall == nil || silent - timeout > worstExcess else { continue }
            stall = StallReport(stage: job.stage, job: entry.label, silentFor: silent, timeout: timeout)
            worstExcess = silent - timeout
        }
        return stall
    }

    /// One look of the monitor at `now`, `answered` telling whether the caller already has its
    /// answer: the next step of the ladder.
    ///
    /// Time the whole process was suspended is nobody's silence: a pack stopped with Ctrl-Z for
    /// a minute and resumed with `fg` failed as stalled the moment it woke. When the monitor
    /// itself looks far later than its interval, the gap is taken off every silence (and the grace
    /// period) before anything is judged.
    mutating func look(at now: ContinuousClock.Instant, policy: WatchdogPolicy, answered: Bool) -> MonitorAction {
        if finished || answered { return .stop }
        if let lastLook, now - lastLook > policy.interval + Self.suspension {
            let missed = now - lastLook - policy.interval
            for stage in stages.keys { stages[stage]!.lastProgress += missed }
            for job in jobs.keys { jobs[job]!.lastProgress += missed }
            cancelledAt = cancelledAt.map { $0 + missed }
        }
        lastLook = now
        if let cancelledAt {
            guard now - cancelledAt >= policy.gracePeriod else { return .wait }
            let grace = "cancelled, it did not stop within \(StallReport.format(policy.gracePeriod))"
            return .terminate(stall.map { "\($0); \(grace)" } ?? grace)
        }
        guard let found = check(at: now, policy: policy) else { return .wait }
        cancelledAt = now
        return .cancel(found)
    }
}
