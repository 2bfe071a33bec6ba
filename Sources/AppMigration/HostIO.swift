import IndexedArchive
import Synchronization

/// The host's blocking file system work (free-space checks, creating and removing staging
/// folders, clearing a container, writing the import status), done on threads of its own.
///
/// Each of these can take a long while on a slow disk or a large tree (removing a staging folder
/// of a hundred thousand files), and Swift's cooperative pool has one thread per core: blocking
/// one of them would stall every task of the process, the watchdog's supervision included.
enum HostIO {
    /// Two threads: a removal and a status write may overlap; idle threads cost nothing.
    private static let pool = WorkerThreadPool(threads: 2, name: "amk-host-io")

    /// Runs `body` off the cooperative pool. Cancelled before it starts, it does not run.
    static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await pool.run { _ in try body() }
    }

    /// Runs `body` off the cooperative pool whatever happens to the calling task: cleanup (removing
    /// a staging folder, recording a failure) must happen on the way out of a cancelled import too.
    static func runToCompletion(_ body: @escaping @Sendable () -> Void) async {
        await pool.runRegardless(body)
    }

    /// ``runToCompletion(_:)-(()->Void)`` for work whose answer the caller needs.
    static func runToCompletion<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        // The job's thread sets it once; the caller reads it after the job is done.
        let answer = Mutex<T?>(nil)
        await pool.runRegardless {
            let value = body()
            answer.withLock { $0 = value }
        }
        return answer.withLock { $0! }
    }
}
