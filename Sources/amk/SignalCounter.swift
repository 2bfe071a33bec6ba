import Synchronization

/// How many signals have arrived, and how long after the first the latest came. A Mutex makes it
/// safe to share between the signal sources' handlers.
final class SignalCounter: Sendable {
    private let state = Mutex<(count: Int, first: ContinuousClock.Instant?)>((0, nil))

    /// How many signals have arrived.
    var count: Int { state.withLock { $0.count } }

    /// Adds one; returns the new count and the time since the first signal.
    func increment() -> (count: Int, sinceFirst: Duration) {
        let now = ContinuousClock.now
        return state.withLock { state in
            state.count += 1
            if state.first == nil { state.first = now }
            return (state.count, state.first.map { $0.duration(to: now) } ?? .zero)
        }
    }
}
