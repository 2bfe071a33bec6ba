import CPlatform
import Foundation
import Synchronization

/// Watches work for stalls, cancels it, and answers the caller on time even if it never stops.
///
/// Stages report with ``begin(_:)``/``end(_:)-(PipelineStage)`` while they have work to do and ``beat(_:)-(PipelineStage)`` when
/// they make progress. A stage that has work and has been silent for its timeout has stalled: the
/// watchdog cancels the operation and records which stage and for how long. A stage without work,
/// such as a producer waiting for a free compressor, is never stalled: backpressure is not a stall.
///
/// The ladder, after swift-service-lifecycle's: stall → cancel → grace period → the caller gets a
/// `terminated` error and the operation is left behind, even if it is stuck in a system call or a
/// loop that ignores cancellation. The monitor runs on a thread of its own, so it fires on time
/// even when every thread of Swift's cooperative pool is busy or blocked.
///
/// Heartbeats are plain lock-protected stores, callable from any thread at any rate.
public final class Watchdog: Sendable {
    struct StageState {
        var active = 0
        var lastProgress: ContinuousClock.Instant
    }

    struct JobState {
        var label: String
        var lastProgress: ContinuousClock.Instant
    }

    struct State {
        var stages: [PipelineStage: StageState] = [:]
        var jobs: [WatchdogJob: JobState] = [:]
        var nextJob: UInt64 = 0
        var stall: StallReport?
        var cancelledAt: ContinuousClock.Instant?
        var finished = false
        var committed = false
    }

    /// The timeouts and the grace period it applies.
    public let policy: WatchdogPolicy
    private let state: Mutex<State>

    /// A watchdog with `policy`; ``supervise(policy:_:)`` makes one and runs the monitor.
    public init(policy: WatchdogPolicy = WatchdogPolicy()) {
        self.policy = policy
        self.state = Mutex(State())
    }

    /// The stage has work to do from now on; its silence counts from here.
    public func begin(_ stage: PipelineStage) {
        let now = ContinuousClock.now
        state.withLock { state in
            var entry = state.stages[stage] ?? StageState(lastProgress: now)
            if entry.active == 0 { entry.lastProgress = now }
            entry.active += 1
            state.stages[stage] = entry
        }
    }

    /// The stage finished a piece of work.
    public func end(_ stage: PipelineStage) {
        let now = ContinuousClock.now
        state.withLock { state in
            guard var entry = state.stages[stage] else { return }
            entry.active = max(0, entry.active - 1)
            entry.lastProgress = now
            state.stages[stage] = entry
        }
    }

    /// The stage made progress.
    public func beat(_ stage: PipelineStage) {
        let now = ContinuousClock.now
        state.withLock { state in
            if state.stages[stage] == nil {
                state.stages[stage] = StageState(lastProgress: now)
            } else {
                state.stages[stage]!.lastProgress = now
            }
        }
    }

    /// A job of `stage` starts now; it has stalled if neither it ends nor beats within the stage's
    /// timeout, whatever its siblings do. `label` names it in a stall report ("block 12", a path).
    ///
    /// Bracket only the job's own work: time spent waiting for another stage (a free compressor,
    /// the writer, a slow peer) must stay outside, since backpressure is not a stall.
    public func begin(_ stage: PipelineStage, job label: String) -> WatchdogJob {
        let now = ContinuousClock.now
        return state.withLock { state in
            let job = WatchdogJob(id: state.nextJob, stage: stage)
            state.nextJob += 1
            state.jobs[job] = JobState(label: label, lastProgress: now)
            return job
        }
    }

    /// The job made progress: its deadline starts again.
    public func beat(_ job: WatchdogJob) {
        let now = ContinuousClock.now
        state.withLock { state in state.jobs[job]?.lastProgress = now }
    }

    /// The job is over, finished or failed.
    public func end(_ job: WatchdogJob) {
        state.withLock { state in _ = state.jobs.removeValue(forKey: job) }
    }

    /// The stall that tripped the watchdog, if any.
    public var stall: StallReport? { state.withLock { $0.stall } }

    /// Marks the point of no return of the supervised work (an archive about to be renamed into
    /// place): a cancellation that comes later cannot undo it, so if the work then returns
    /// normally, ``supervise(policy:_:)`` reports that success instead of a cancellation ignored.
    ///
    /// Returns `false`, and commits nothing, if the work has already been cancelled (by a stall or
    /// by the caller): it must then stop (with `CancellationError`) instead of committing.
    package func commit() -> Bool {
        state.withLock { state in
            guard state.cancelledAt == nil else { return false }
            state.committed = true
            return true
        }
    }

    var isCommitted: Bool { state.withLock { $0.committed } }

    /// Checks every stage; records and returns the first stall found.
    func check(now: ContinuousClock.Instant = .now) -> StallReport? {
        state.withLock { state in
            if let stall = state.stall { return stall }
            // The engine's stages in their order, then the callers' by name: a stable order, so
            // that of two stages stalled at once the report always names the same one.
            let callers = state.stages.keys.filter { !PipelineStage.engineStages.contains($0) }.sorted { $0.rawValue < $1.rawValue }
            for stage in PipelineStage.engineStages + callers {
                guard let entry = state.stages[stage], entry.active > 0 else { continue }
                let silent = now - entry.lastProgress
                let timeout = policy.timeout(for: stage)
                if silent >= timeout {
                    let report = StallReport(stage: stage, silentFor: silent, timeout: timeout)
                    state.stall = report
                    return report
                }
            }
            // The job silent the longest past its deadline, so the report names the culprit.
            var worst: StallReport?
            var worstExcess = Duration.zero
            for (job, entry) in state.jobs {
                let silent = now - entry.lastProgress
                let timeout = policy.timeout(for: job.stage)
                guard silent >= timeout, worst == nil || silent - timeout > worstExcess else { continue }
                worst = StallReport(stage: job.stage, job: entry.label, silentFor: silent, timeout: timeout)
                worstExcess = silent - timeout
            }
            state.stall = worst
            return worst
        }
    }

    // MARK: - Supervision

    /// Runs `operation` under a watchdog.
    ///
    /// - Returns: what `operation` returns, if it finishes without being cancelled.
    /// - Throws: `ArchiveError` `.stalled` (naming the stage and the silence) when the watchdog
    ///   cancelled it and it stopped in time; `.terminated` when it was cancelled (by a stall or by
    ///   the caller) and did not stop within the grace period, or returned normally as if it had
    ///   not been cancelled; `CancellationError` when the caller cancelled and it stopped; or what
    ///   the operation threw.
    ///
    /// The operation runs in a task of its own, which this function cancels and awaits, except when
    /// it must be abandoned because it does not stop: that is the point of the grace period.
    public static func supervise<T: Sendable>(
        policy: WatchdogPolicy = WatchdogPolicy(),
        _ operation: @escaping @Sendable (Watchdog) async throws -> T
    ) async throws -> T {
        let watchdog = Watchdog(policy: policy)
        let supervision = Supervision<T>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                supervision.install(continuation)
                let task = Task {
                    let result: Result<T, any Error>
                    do { result = .success(try await operation(watchdog)) } catch { result = .failure(error) }
                    watchdog.state.withLock { $0.finished = true }
                    supervision.finish(result, watchdog: watchdog)
                }
                supervision.setTask(task)
                let monitor = Thread {
                    amk_set_thread_name("amk-watchdog")
                    watchdog.monitor(supervision: supervision)
                }
                monitor.name = "amk-watchdog"
                monitor.start()
            }
        } onCancel: {
            watchdog.state.withLock { state in
                if state.cancelledAt == nil { state.cancelledAt = .now }
            }
            supervision.cancelTask()
        }
    }

    /// The monitor thread: looks every interval, cancels on a stall, gives up after the grace.
    private func monitor<T>(supervision: Supervision<T>) {
        let interval = policy.interval
        while true {
            Thread.sleep(forTimeInterval: interval.secondsValue)
            let (finished, cancelledAt) = state.withLock { ($0.finished, $0.cancelledAt) }
            if finished || supervision.isAnswered { return }
            if let cancelledAt {
                if ContinuousClock.now - cancelledAt >= policy.gracePeriod {
                    let stall = self.stall
                    let why =
                        stall.map { "\($0); cancelled, it did not stop within \(StallReport.format(policy.gracePeriod))" }
                        ?? "cancelled, it did not stop within \(StallReport.format(policy.gracePeriod))"
                    supervision.answer(.failure(ArchiveError(.terminated, "terminated: \(why)")))
                    return
                }
                continue
            }
            if check() != nil {
                state.withLock { $0.cancelledAt = .now }
                supervision.cancelTask()
            }
        }
    }
}

extension Duration {
    package var secondsValue: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) / 1e18
    }
}
