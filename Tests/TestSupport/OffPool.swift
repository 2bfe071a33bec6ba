import Foundation

/// Runs blocking work (file I/O, generating data, a hand-written peer's socket calls) on a thread
/// of its own and waits for it. Tests run in parallel on Swift's cooperative pool, which has one
/// thread per core (two here): holding one of them in a blocking call for long would stall every
/// other test, the watchdog's and the receiver a peer is talking to among them.
package func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try body() }) }
        thread.start()
    }
}
