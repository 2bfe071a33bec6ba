import Foundation
import Synchronization

/// Shows a pack's progress as ``StoredProgress`` counts it: the members' bytes stored, as far as
/// the blocks written cover them. ``PackOptions/progress`` and `amk pack`'s bar are both fed by one.
///
/// `Sendable`: the counts are in a `Mutex`, and `show` is `@Sendable`.
package final class ProgressReport: Sendable {
    private let counts: Mutex<StoredProgress>
    private let show: @Sendable (UInt64) -> Void

    /// A report that calls `show` with the bytes to show each time they change, under its lock,
    /// so that two threads cannot show their counts out of order.
    package init(chunkSize: Int, show: @escaping @Sendable (UInt64) -> Void) {
        self.counts = Mutex(StoredProgress(chunkSize: chunkSize))
        self.show = show
    }

    /// A report that advances `progress` from what it had completed before the pack.
    ///
    /// Its total may be an estimate below what is stored (an export's size estimate need not be
    /// exact, and is often 0): the completed count then holds at the total, so that the fraction
    /// stays at or under 1 and never goes back. A completed count past the total once showed a
    /// caller's bar 0%, 100%, then 0% again at the end. The total is never changed: raising it
    /// with each block (the total following what is done) made Foundation's exact fraction
    /// arithmetic overflow in the parent and trap, killing the process, for a 3-byte file and a
    /// 1 GiB one under an estimate of 1 byte.
    convenience init(_ progress: Progress, chunkSize: Int) {
        let base = progress.completedUnitCount
        self.init(chunkSize: chunkSize) { shown in
            let completed = base + Int64(clamping: shown)
            let total = progress.totalUnitCount
            progress.completedUnitCount = total > 0 ? min(completed, total) : completed
        }
    }

    /// A member of `bytes` content bytes was serialised.
    package func stored(_ bytes: UInt64) {
        update { $0.store(bytes) }
    }

    /// Block `sequence` was written.
    package func blockWritten(sequence: Int) {
        update { $0.blockWritten(sequence: sequence) }
    }

    private func update(_ change: (inout StoredProgress) -> Void) {
        counts.withLock { counts in
            let before = counts.shown
            change(&counts)
            if counts.shown != before { show(counts.shown) }
        }
    }
}
