import Foundation
import IndexedArchive
import Synchronization
import Testing

/// How one pack ended.
enum PackOutcome: Sendable {
    case success(PackSummary)
    case cancelled
    case archiveError(ArchiveError)
    case injected(InjectedFault)
    case other(String)
    /// It had not returned when the test gave up on it.
    case hung

    init(_ result: Result<PackSummary, any Error>) {
        switch result {
        case .success(let summary): self = .success(summary)
        case .failure(let error as ArchiveError): self = .archiveError(error)
        case .failure(let error as InjectedFault): self = .injected(error)
        case .failure(let error) where error is CancellationError: self = .cancelled
        case .failure(let error): self = .other("\(type(of: error)): \(error)")
        }
    }

    var isSuccess: Bool { if case .success = self { return true } else { return false } }
    var isCancelled: Bool { if case .cancelled = self { return true } else { return false } }

    var archiveError: ArchiveError? { if case .archiveError(let error) = self { return error } else { return nil } }

    /// A short name, for tallies.
    var label: String {
        switch self {
        case .success: return "success"
        case .cancelled: return "CancellationError"
        case .archiveError(let error): return "ArchiveError.\(error.code)"
        case .injected: return "InjectedFault"
        case .other: return "other"
        case .hung: return "hung"
        }
    }

    var detail: String {
        switch self {
        case .success(let summary): return "success (\(summary.entries) entries, \(summary.blocks) blocks)"
        case .archiveError(let error): return "ArchiveError \(error.code): \(error)"
        case .other(let text): return "unexpected error \(text)"
        default: return label
        }
    }
}

/// A pack's outcome and when it returned.
struct PackResult: Sendable {
    var outcome: PackOutcome
    var started: ContinuousClock.Instant
    /// When the pack returned to its caller (for a hung pack, when the test gave up).
    var returned: ContinuousClock.Instant
    /// The longest a task on Swift's cooperative pool waited for a thread during the pack.
    var poolLag: Duration = .zero

    var elapsed: Duration { returned - started }
}

/// Measures how late Swift's cooperative pool runs a task that asks to wake every 10 ms.
///
/// Code that blocks the pool's threads (in another test of the process, or in the engine) delays
/// every task, the engine's included; a run's failure message says how much, so a starved pool
/// is told apart from a slow engine.
final class PoolLagProbe: Sendable {
    private let worst = Mutex<Duration>(.zero)
    private let samples = Mutex<[Duration]>([])
    private let task = Mutex<Task<Void, Never>?>(nil)

    func start() {
        let probe = Task { [self] in
            while !Task.isCancelled {
                let before = ContinuousClock.now
                do { try await Task.sleep(for: .milliseconds(10)) } catch { return }
                let lag = ContinuousClock.now - before - .milliseconds(10)
                self.worst.withLock { $0 = max($0, lag) }
                self.samples.withLock { $0.append(lag) }
            }
        }
        task.withLock { $0 = probe }
    }

    /// Stops the probe; returns the worst lag seen.
    func stop() -> Duration {
        task.withLock { $0?.cancel() }
        return worst.withLock { $0 }
    }

    /// Every lag measured so far (one per 10 ms wake-up), sorted.
    var lags: [Duration] { samples.withLock { $0 }.sorted() }

    /// A lag past this is starvation: in a run of the stress suite alone the pool lags tens of ms.
    static let starvedLag: Duration = .milliseconds(250)

    /// Whether `starved` runs out of `runs` are few enough to blame neighbours rather than the engine
    /// (an engine that blocked the pool's threads would starve every run).
    static func tolerated(_ starved: Int, of runs: Int) -> Bool { starved <= max(2, runs / 5) }

    /// Waits until the pool has run tasks on time for half a second in a row (at most `timeout`);
    /// returns how long that took. The other suites of a `swift test` run start all at once, and
    /// some block the pool's threads for seconds; timing a cancellation meanwhile measures them.
    static func waitUntilQuiet(timeout: Duration = .seconds(120)) async throws -> Duration {
        let start = ContinuousClock.now
        var quietSince: ContinuousClock.Instant?
        while ContinuousClock.now - start < timeout {
            let before = ContinuousClock.now
            try await Task.sleep(for: .milliseconds(10))
            let now = ContinuousClock.now
            if now - before - .milliseconds(10) < .milliseconds(30) {
                let since = quietSince ?? now
                quietSince = since
                if now - since >= .milliseconds(500) { break }
            } else {
                quietSince = nil
            }
        }
        let waited = ContinuousClock.now - start
        if waited > .seconds(1) {
            print("STRESS: waited \(String(format: "%.1f s", waited.seconds)) for Swift's cooperative pool to run tasks on time")
        }
        return waited
    }
}

/// Runs `body` (a pack) in a task of its own, arms `cancel` with that task, and waits at most
/// `timeout` for it: a hung engine must fail the run, not hang the suite.
func runPack(
    cancel: CancelSwitch? = nil, timeout: Duration = .seconds(30),
    _ body: @escaping @Sendable () async throws -> PackSummary
) async -> PackResult {
    let started = ContinuousClock.now
    let probe = PoolLagProbe()
    probe.start()
    let task = Task { () -> (Result<PackSummary, any Error>, ContinuousClock.Instant) in
        let result: Result<PackSummary, any Error>
        do { result = .success(try await body()) } catch { result = .failure(error) }
        return (result, ContinuousClock.now)
    }
    cancel?.arm { task.cancel() }
    let slot = Mutex<CheckedContinuation<PackResult, Never>?>(nil)
    let resume: @Sendable (PackResult) -> Void = { value in
        slot.withLock { pending in
            pending?.resume(returning: value)
            pending = nil
        }
    }
    var result = await withCheckedContinuation { (continuation: CheckedContinuation<PackResult, Never>) in
        slot.withLock { $0 = continuation }
        Task {
            let (result, returned) = await task.value
            resume(PackResult(outcome: PackOutcome(result), started: started, returned: returned))
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout.seconds) {
            resume(PackResult(outcome: .hung, started: started, returned: .now))
        }
    }
    result.poolLag = probe.stop()
    return result
}

/// Records an issue, with the run's seed and how to replay it, when `condition` is false.
struct RunContext: Sendable {
    var index: Int
    var seed: UInt64
    var scenario: String
    /// The cooperative pool's worst lag during the run, once known.
    var poolLag: Duration?

    /// Whether the cooperative pool was starved during the run (by other tests of the process, or
    /// by the engine): its timing says nothing about the engine's latency then. Tests tolerate a
    /// few such runs, not many (see ``PoolLagProbe/tolerated(_:of:)``).
    var starved: Bool { (poolLag ?? .zero) >= PoolLagProbe.starvedLag }

    /// Whether `outcome` is a `.terminated` that a starved pool explains: cancelled work that
    /// could not get a thread to return on within the grace period.
    func starvedTermination(_ outcome: PackOutcome) -> Bool {
        starved && outcome.archiveError?.code == .terminated
    }

    var prefix: String {
        let lag = poolLag.map { $0 > .milliseconds(50) ? ", cooperative pool lagged up to \($0.formatted)" : "" } ?? ""
        return "run \(index) seed \(StressSettings.hex(seed)) [\(scenario)] (\(StressSettings.replay(seed))\(lag))"
    }

    func check(
        _ condition: Bool, _ message: @autoclosure () -> String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(condition, "\(prefix): \(message())", sourceLocation: sourceLocation)
    }

    func fail(_ message: String, sourceLocation: SourceLocation = #_sourceLocation) {
        Issue.record("\(prefix): \(message)", sourceLocation: sourceLocation)
    }
}

/// The percentile `p` (0...1) of sorted values, nearest rank.
func percentile(_ sorted: [Duration], _ p: Double) -> Duration {
    guard !sorted.isEmpty else { return .zero }
    let rank = Int((p * Double(sorted.count)).rounded(.up)) - 1
    return sorted[min(max(rank, 0), sorted.count - 1)]
}

func distribution(_ values: [Duration]) -> String {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return "n=0" }
    return
        "n=\(sorted.count) p50=\(percentile(sorted, 0.5).formatted) p99=\(percentile(sorted, 0.99).formatted) max=\(sorted.last!.formatted)"
}
