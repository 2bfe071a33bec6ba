import Foundation
import Synchronization

/// Advances a caller's `Progress` (``PackOptions/progress``) as ``StoredProgress`` counts: by the
/// members stored, as far as the blocks written cover them.
///
/// `Sendable`: the counts are in a `Mutex`, and the `Progress` is Foundation's thread-safe class.
final class ProgressReport: Sendable {
    private let progress: Progress
    /// What the progress had completed before the pack: the pack's bytes add to it.
    private let base: Int64
    private let counts: Mutex<StoredProgress>

    init(_ progress: Progress, chunkSize: Int) {
        self.progress = progress
        self.base = progress.completedUnitCount
        self.counts = Mutex(StoredProgress(chunkSize: chunkSize))
    }

    /// A member of `bytes` content bytes was serialised.
    func stored(_ bytes: UInt64) {
        update { $0.store(bytes) }
    }

    /// Block `sequence` was written.
    func blockWritten(sequence: Int) {
        update { $0.blockWritten(sequence: sequence) }
    }

    private func update(_ change: (inout StoredProgress) -> Void) {
        // Set under the lock, so that two threads cannot set their counts out of order.
        counts.withLock { counts in
            let before = counts.shown
            change(&counts)
            if counts.shown != before { progress.completedUnitCount = base + Int64(counts.shown) }
        }
    }
}
