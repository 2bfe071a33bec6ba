import Dispatch

/// Waits for async work from synchronous code.
///
/// libFuzzer calls its entry point synchronously, on its own thread, while ``ArchiveReader``'s
/// API is async. The work runs as a detached task on the cooperative pool and the calling
/// thread, which is not one of the pool's, waits on a semaphore; the library gains no
/// synchronous API just for fuzzing.
public enum Blocking {
    /// Runs `body` to completion and returns.
    public static func run(_ body: @escaping @Sendable () async -> Void) {
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            await body()
            done.signal()
        }
        done.wait()
    }
}
