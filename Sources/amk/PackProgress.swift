import IndexedArchive
import Synchronization

/// Turns ``PackEvent``s into progress-bar updates.
///
/// Progress is counted in content bytes stored (`entryStored`), against the total from
/// ``ArchivePacker/contentSize(of:exclusion:)``. But a member counts as stored as soon as it is serialised,
/// and the pipeline holds up to two chunks per compressor (128 MiB with the defaults) ahead of the
/// writer, so a small pack would sit at 100% while it compresses. The count is therefore capped by
/// the tar bytes of the blocks already written (`blockWritten`: sequence + 1 chunks), which is what
/// makes the bar, rate and ETA follow the compression, the slow part.
final class PackProgress: Sendable {
    private struct Counts {
        var stored: UInt64 = 0
        var written: UInt64 = 0
    }

    private let bar: ProgressBar
    private let chunkSize: UInt64
    private let counts = Mutex(Counts())

    init(bar: ProgressBar, chunkSize: Int) {
        self.bar = bar
        self.chunkSize = UInt64(chunkSize)
    }

    /// The `PackOptions.onEvent` handler; called on the engine's threads.
    func handle(_ event: PackEvent) {
        let shown: UInt64? = counts.withLock { counts in
            switch event {
            case .entryStored(_, let bytes):
                counts.stored += bytes
            case .blockWritten(let sequence, _):
                counts.written = max(counts.written, UInt64(sequence + 1) * chunkSize)
            default:
                return nil
            }
            return min(counts.stored, counts.written)
        }
        if let shown { bar.update(completed: shown) }
    }

    /// Clears the line; later events are ignored.
    func finish() {
        bar.finish()
    }
}
