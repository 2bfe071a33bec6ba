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

    var elapsed: Duration { returned - started }
}

/// Runs `body` (a pack) in a task of its own, arms `cancel` with that task, and waits at most
/// `timeout` for it: a hung engine must fail the run, not hang the suite.
func runPack(cancel: CancelSwitch? = nil, timeout: Duration = .seconds(30),
             _ body: @escaping @Sendable () async throws -> PackSummary) async -> PackResult {
    let started = ContinuousClock.now
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
    return await withCheckedContinuation { (continuation: CheckedContinuation<PackResult, Never>) in
        slot.withLock { $0 = continuation }
        Task {
            let (result, returned) = await task.value
            resume(PackResult(outcome: PackOutcome(result), started: started, returned: returned))
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout.seconds) {
            resume(PackResult(outcome: .hung, started: started, returned: .now))
        }
    }
}

/// Records an issue, with the run's seed and how to replay it, when `condition` is false.
struct RunContext: Sendable {
    var index: Int
    var seed: UInt64
    var scenario: String

    var prefix: String {
        "run \(index) seed \(StressSettings.hex(seed)) [\(scenario)] (\(StressSettings.replay(seed)))"
    }

    func check(_ condition: Bool, _ message: @autoclosure () -> String,
               sourceLocation: SourceLocation = #_sourceLocation) {
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
    return "n=\(sorted.count) p50=\(percentile(sorted, 0.5).formatted) p99=\(percentile(sorted, 0.99).formatted) max=\(sorted.last!.formatted)"
}
