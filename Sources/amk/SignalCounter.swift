import Synchronization

/// Counts signals received, from dispatch's handler threads.
final class SignalCounter: Sendable {
    private let count = Atomic<Int>(0)

    /// Adds one and returns the new count.
    func increment() -> Int {
        count.add(1, ordering: .relaxed).newValue
    }
}
