import Foundation
import Synchronization

/// The one answer a supervised call gives, from whichever of the operation, the monitor and the
/// caller's cancellation comes first; a Mutex makes "first" well defined.
final class Supervision<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var task: Task<Void, Never>?
        var cancelRequested = false
        var answered = false
    }

    private let state = Mutex(State())

    func install(_ continuation: CheckedContinuation<T, any Error>) {
        state.withLock { $0.continuation = continuation }
    }

    func setTask(_ task: Task<Void, Never>) {
        let cancelNow = state.withLock { state -> Bool in
            state.task = task
            return state.cancelRequested
        }
        if cancelNow { task.cancel() }
    }

    func cancelTask() {
        let task = state.withLock { state -> Task<Void, Never>? in
            state.cancelRequested = true
            return state.task
        }
        task?.cancel()
    }

    var isAnswered: Bool { state.withLock { $0.answered } }

    func answer(_ result: Result<T, any Error>) {
        let continuation = state.withLock { state -> CheckedContinuation<T, any Error>? in
            guard !state.answered else { return nil }
            state.answered = true
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(with: result)
    }

    /// The operation returned: answer with its ``verdict(_:cancelled:committed:stall:)``.
    func finish(_ result: Result<T, any Error>, watchdog: Watchdog) {
        let cancelled = state.withLock { $0.cancelRequested }
        answer(Self.verdict(result, cancelled: cancelled, committed: watchdog.isCommitted, stall: watchdog.stall))
    }

    /// What the caller is told when the operation returned `result`: as it is, unless it was
    /// cancelled (`cancelled`, by a stall or by the caller) before its point of no return
    /// (`committed`). Then a success means the cancellation was ignored (`.terminated`); a
    /// cancellation after a stall is that stall (`.stalled`); and a verdict the operation reached
    /// itself (`.terminated`: an extension process it had to kill) says more than the stall alone
    /// and stands.
    static func verdict(
        _ result: Result<T, any Error>, cancelled: Bool, committed: Bool, stall: StallReport?
    ) -> Result<T, any Error> {
        guard cancelled else { return result }
        switch result {
        case .success:
            // Cancelled after its point of no return: the work was done, not ignored.
            if committed { return result }
            let why =
                stall.map { "\($0); cancelled, it returned as if it had not been" }
                ?? "cancellation ignored: returned normally after being cancelled"
            return .failure(ArchiveError(.terminated, "terminated: \(why)"))
        case .failure(let error):
            if (error as? ArchiveError)?.code == .terminated { return result }
            if let stall, error is CancellationError || (error as? ArchiveError)?.code != .stalled {
                return .failure(ArchiveError(.stalled, stall.description))
            }
            return result
        }
    }
}
