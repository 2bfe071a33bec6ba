import IndexedArchive

/// Turns ``PackEvent``s into progress-bar updates.
///
/// Progress is counted in content bytes stored (`entryStored`), against the total from
/// ``ArchivePacker/contentSize(of:exclusion:)``, and shown as far as the blocks written cover
/// it (``ProgressReport``), so that the bar, rate and ETA follow the compression.
final class PackProgress: Sendable {
    private let bar: ProgressBar
    private let report: ProgressReport

    init(bar: ProgressBar, chunkSize: Int) {
        self.bar = bar
        self.report = ProgressReport(chunkSize: chunkSize) { bar.update(completed: $0) }
    }

    /// The `PackOptions.onEvent` handler; called on the engine's threads.
    func handle(_ event: PackEvent) {
        switch event {
        case .entryStored(_, let bytes): report.stored(bytes)
        case .blockWritten(let sequence, _): report.blockWritten(sequence: sequence)
        default: break
        }
    }

    /// Clears the line; later events are ignored.
    func finish() {
        bar.finish()
    }
}
