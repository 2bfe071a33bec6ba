import Foundation

/// Shows a Foundation `Progress` (the host's, for export, import, send and receive) as a
/// ``ProgressBar`` while an operation runs.
///
/// Foundation on Linux cannot observe a `Progress` by key-value observing, so a child task reads
/// it ten times a second, as often as the bar redraws anyway; it is cancelled and awaited when
/// the operation ends, and the bar is erased before anything else is printed.
enum ProgressMonitor {
    /// Runs `body`, showing `progress` under `label` if `show`.
    ///
    /// `unit` says what `progress` counts: `.bytes` when its units are bytes (an export's), or
    /// `.fraction` for a share of a whole (an import's).
    static func run<Result: Sendable>(
        _ progress: Progress, label: String, show: Bool, unit: ProgressBar.Unit,
        _ body: @Sendable () async throws -> Result
    ) async throws -> Result {
        guard show else { return try await body() }
        return try await withThrowingTaskGroup(of: Result?.self) { group in
            group.addTask {
                var bar: ProgressBar?
                defer { bar?.finish() }
                while !Task.isCancelled {
                    // The host advances a child progress, which reaches the parent's completed
                    // count only when it ends; its fraction is always current.
                    let total = max(progress.totalUnitCount, 0)
                    if bar == nil, total > 0 { bar = ProgressBar(label: label, total: UInt64(total), unit: unit) }
                    let fraction = min(max(progress.fractionCompleted, 0), 1)
                    bar?.update(completed: UInt64((Double(total) * fraction).rounded(.down)))
                    do {
                        try await Task.sleep(for: ProgressBar.minimumInterval)
                    } catch is CancellationError {
                        // The operation ended: the bar is erased by the defer.
                        break
                    }
                }
                return nil
            }
            defer { group.cancelAll() }
            let result = try await body()
            group.cancelAll()
            try await group.waitForAll()
            return result
        }
    }
}
