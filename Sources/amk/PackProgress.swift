import IndexedArchive
import Synchronization

/// Turns ``PackEvent``s into progress-bar updates.
///
/// Progress is counted in content bytes stored (`entryStored`), against the total from
/// ``ArchivePacker/contentSize(of:exclusion:)``, and shown as far as the blocks written cover
/// it (``StoredProgress``), so that the bar, rate and ETA follow the compression.
final class PackProgress: Sendable {
    private let bar: ProgressBar
    private let counts: Mutex<StoredProgress>

    init(bar: ProgressBar, chunkSize: Int) {
        self.bar = bar
        self.counts = Mutex(StoredProgress(chunkSize: chunkSize))
    }

    /// The `PackOptions.onEvent` handler; called on the engine's threads.
    func handle(_ event: PackEvent) {
        let shown: UInt64? = counts.withLock { counts in
            switch event {
            case .entryStored(_, let bytes):
                counts.store(bytes)
            case .blockWritten(let sequence, _):
                counts.blockWritten(sequence: sequence)
            default:
                return nil
            }
            return counts.shown
        }
        if let shown { bar.update(completed: shown) }
    }

    /// Clears the line; later events are ignored.
    func finish() {
        bar.finish()
    }
}
