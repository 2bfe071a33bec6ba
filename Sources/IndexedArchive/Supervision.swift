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

    /// The operation returned: translate its result by what happened to it.
    func finish(_ result: Result<T, any Error>, watchdog: Watchdog) {
        let cancelled = state.withLock { $0.cancelRequested }
        guard cancelled else { return answer(result) }
        // Cancelled after its point of no return: the work was done, not ignored.
        if case .success = result, watchdog.isCommitted { return answer(result) }
        let stall = watchdog.stall
        switch result {
        case .success:
            // Cancelled work that reports success has ignored the cancellation.
            let why =
                stall.map { "\($0); cancelled, it returned as if it had not been" }
                ?? "cancellation ignored: returned normally after being cancelled"
            answer(.failure(ArchiveError(.terminated, "terminated: \(why)")))
        case .failure(let error):
            // A verdict the operation reached itself (an extension process it had to kill) says
            // more than the stall alone, and includes it.
            if (error as? ArchiveError)?.code == .terminated { return answer(result) }
            if let stall, error is CancellationError || (error as? ArchiveError)?.code != .stalled {
                answer(.failure(ArchiveError(.stalled, stall.description)))
            } else {
                answer(.failure(error))
            }
        }
    }
}
