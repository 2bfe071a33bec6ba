import Synchronization

/// Counts the disk changes `amk _legacy-sweep` reports, from the probe's `@Sendable` closure.
final class ChangeCounter: Sendable {
    private let value = Mutex(0)

    /// Counts one more change; returns the new count.
    func next() -> Int {
        value.withLock { count in
            count += 1
            return count
        }
    }

    var count: Int { value.withLock { $0 } }
}
