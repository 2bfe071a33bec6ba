import Foundation
import Synchronization

/// A gate a test opens; code waiting on it blocks its thread (as a stuck system call would) or
/// waits without honouring cancellation (as code that ignores it would).
final class Gate: Sendable {
    private let isOpen = Atomic(false)

    func open() {
        isOpen.store(true, ordering: .releasing)
    }

    var isOpenNow: Bool { isOpen.load(ordering: .acquiring) }

    /// Blocks the calling thread until the gate opens, whatever happens to the task.
    func blockThread() {
        while !isOpen.load(ordering: .acquiring) { usleep(5_000) }
    }
}

/// Waits `duration` without honouring cancellation, and without holding a thread of the caller's.
///
/// The wait is a thread of its own, not `DispatchQueue.global()`: in the full suite other tests
/// block dispatch's threads on purpose (extensions stuck in a call), and a timer callback queued
/// behind them once came 30 s late.
func waitIgnoringCancellation(_ duration: Duration) async {
    let (seconds, attoseconds) = duration.components
    let interval = Double(seconds) + Double(attoseconds) / 1e18
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        let thread = Thread {
            Thread.sleep(forTimeInterval: interval)
            continuation.resume()
        }
        thread.start()
    }
}

/// Returns once the current task is cancelled (polling every 10 ms, for at most a minute),
/// without throwing: an extension that notices the cancellation and carries on.
func waitUntilCancelledIgnoringIt() async {
    for _ in 0..<6000 where !Task.isCancelled {
        await waitIgnoringCancellation(.milliseconds(10))
    }
}

/// A value set from inside an extension, read by the test.
final class Box<Value: Sendable>: Sendable {
    private let value: Mutex<Value>

    init(_ value: Value) {
        self.value = Mutex(value)
    }

    var current: Value {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }

    /// Changes the value under the lock and returns the new one, for counts kept by several
    /// threads.
    @discardableResult
    func update(_ change: (inout Value) -> Void) -> Value {
        value.withLock {
            change(&$0)
            return $0
        }
    }
}

/// Waits up to `timeout` for `condition`, for effects that settle after an abandoned task ends.
///
/// It returns as soon as the condition holds, so the default is long: on a loaded 2-core machine
/// the suites beside this one have held the cooperative pool for 20 to 30 s at a time.
func eventually(timeout: Duration = .seconds(30), _ condition: () -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try await Task.sleep(for: .milliseconds(20))
    }
    return condition()
}
