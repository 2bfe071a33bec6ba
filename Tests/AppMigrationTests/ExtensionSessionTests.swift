import Foundation
import Synchronization
import TestSupport
import Testing

@testable import AppMigration

/// The host's side of one extension process (``ExtensionSession``), driven directly.
@Suite struct ExtensionSessionTests {
    /// What the heartbeat handler saw, shared with the test's body.
    final class Seen: Sendable {
        let threads = Mutex<Set<String>>([])
        let taken = Atomic(0)
        /// What the wait returned: nil when it was cancelled, as it should be.
        let returned = Mutex<ExtensionMessage?>(nil)
    }

    /// An import's heartbeats are judged on the session's own thread as they are read, within
    /// one wait for the next message: they reach the watchdog even while other work holds every
    /// thread of Swift's cooperative pool, where a loop that awaited each of them did not run.
    @Test func heartbeatsAreTakenOnTheSessionsThreadWithoutReturning() async throws {
        try await Scratch.with { scratch in
            let container = try ExtensionProcessTests.seeded(scratch, "beating")
            let seen = Seen()
            // Sent no task, the extension is killed when the session ends: the run's error says so.
            await #expect(throws: AppMigrationError.self) {
                try await ExtensionSession.run(
                    ExtensionProcessTests.misbehaving(nil), name: "beating", container: container, gracePeriod: .seconds(1),
                    watchdog: nil
                ) { session in
                    // Sent no task, the extension only beats, every 100 ms.
                    try await withThrowingTaskGroup(of: ExtensionMessage?.self) { group in
                        group.addTask {
                            try await session.next { _, _, _ in
                                let name = Thread.current.name ?? ""
                                seen.threads.withLock { _ = $0.insert(name) }
                                // Heartbeats already buffered when the call began are taken on
                                // the caller's thread (a loaded machine starts the wait late);
                                // only those taken while it waits count.
                                if name == "amk-extension-0" { seen.taken.add(1, ordering: .relaxed) }
                            }
                        }
                        let deadline = ContinuousClock.now + .seconds(60)
                        while seen.taken.load(ordering: .relaxed) < 5 && ContinuousClock.now < deadline {
                            try await Task.sleep(for: .milliseconds(20))
                        }
                        group.cancelAll()
                        do {
                            let message = try await group.next() ?? nil
                            seen.returned.withLock { $0 = message }
                        } catch is CancellationError {
                            // cancellation: the waiting call ends so once it is cancelled; that is the test
                        }
                    }
                }
            }
            let returned = seen.returned.withLock { $0 }
            #expect(returned == nil, "no heartbeat was returned: \(String(describing: returned))")
            #expect(seen.taken.load(ordering: .relaxed) >= 5, "five heartbeats taken on the session's thread within one call")
            #expect(seen.threads.withLock { $0.contains("amk-extension-0") }, "\(seen.threads.withLock { $0 })")
        }
    }
}
