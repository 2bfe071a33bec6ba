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
    /// The timeouts and the grace period it applies.
    public let policy: WatchdogPolicy
    /// Every decision is the state's (``WatchdogState``); the watchdog gives it the time.
    private let state = Mutex(WatchdogState())
    /// Signs of life the monitor looks for itself (see ``addProbe(for:_:)``), by number.
    private let probes = Mutex<(next: Int, all: [Int: Probe])>((0, [:]))

    /// A sign of life asked for at each check, and the stage it beats for.
    private struct Probe {
        var stage: PipelineStage
        var isAlive: @Sendable () -> Bool
    }

    /// A watchdog with `policy`; ``supervise(policy:_:)`` makes one and runs the monitor.
    public init(policy: WatchdogPolicy = WatchdogPolicy()) {
        self.policy = policy
    }

    /// The stage has work to do from now on; its silence counts from here.
    public func begin(_ stage: PipelineStage) {
        let now = ContinuousClock.now
        state.withLock { $0.begin(stage, at: now) }
    }

    /// The stage finished a piece of work.
    public func end(_ stage: PipelineStage) {
        let now = ContinuousClock.now
        state.withLock { $0.end(stage, at: now) }
    }

    /// The stage made progress.
    public func beat(_ stage: PipelineStage) {
        let now = ContinuousClock.now
        state.withLock { $0.beat(stage, at: now) }
    }

    /// A job of `stage` starts now; it has stalled if neither it ends nor beats within the stage's
    /// timeout, whatever its siblings do. `label` names it in a stall report ("block 12", a path).
    ///
    /// Bracket only the job's own work: time spent waiting for another stage (a free compressor,
    /// the writer, a slow peer) must stay outside, since backpressure is not a stall.
    public func begin(_ stage: PipelineStage, job label: String) -> WatchdogJob {
        let now = ContinuousClock.now
        return state.withLock { $0.beginJob(stage, label: label, at: now) }
    }

    /// The job made progress: its deadline starts again.
    public func beat(_ job: WatchdogJob) {
        let now = ContinuousClock.now
        state.withLock { $0.beat(job, at: now) }
    }

    /// The job is over, finished or failed.
    public func end(_ job: WatchdogJob) {
        state.withLock { $0.end(job) }
    }

    /// Asks `isAlive` at every check, on the monitor's own thread, and counts a `true` as a beat
    /// of `stage`; returns the number that ``removeProbe(_:)`` takes.
    ///
    /// For work whose progress can be read but is not reported (the CPU time of an importer that
    /// computes without a word): a task that polled it and beat would share the cooperative pool
    /// with everything else, and when other work held the pool's threads for a stall timeout, the
    /// importer was stopped as stuck while it computed. `isAlive` must be quick and must not block.
    package func addProbe(for stage: PipelineStage, _ isAlive: @escaping @Sendable () -> Bool) -> Int {
        probes.withLock { probes in
            probes.next += 1
            probes.all[probes.next] = Probe(stage: stage, isAlive: isAlive)
            return probes.next
        }
    }

    /// Stops asking the probe `number` (from ``addProbe(for:_:)``).
    package func removeProbe(_ number: Int) {
        _ = probes.withLock { $0.all.removeValue(forKey: number) }
    }

    /// Asks every probe, outside the locks, and beats for those alive.
    private func askProbes() {
        for probe in probes.withLock({ Array($0.all.values) }) where probe.isAlive() {
            beat(probe.stage)
        }
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
        state.withLock { $0.commit() }
    }

    var isCommitted: Bool { state.withLock { $0.committed } }

    /// Checks every stage; records and returns the first stall found.
    func check(now: ContinuousClock.Instant = .now) -> StallReport? {
        state.withLock { $0.check(at: now, policy: policy) }
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
                    watchdog.state.withLock { $0.finish() }
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
            let now = ContinuousClock.now
            watchdog.state.withLock { $0.cancel(at: now) }
            supervision.cancelTask()
        }
    }

    /// The monitor thread: looks every interval and does what the state says (``WatchdogState/look(at:policy:answered:)``):
    /// cancels on a stall, gives up after the grace period, ends when the work does.
    private func monitor<T>(supervision: Supervision<T>) {
        while true {
            Thread.sleep(forTimeInterval: policy.interval.secondsValue)
            askProbes()
            let answered = supervision.isAnswered
            let now = ContinuousClock.now
            switch state.withLock({ $0.look(at: now, policy: policy, answered: answered) }) {
            case .wait:
                continue
            case .cancel:
                supervision.cancelTask()
            case .terminate(let why):
                supervision.answer(.failure(ArchiveError(.terminated, "terminated: \(why)")))
                return
            case .stop:
                return
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
