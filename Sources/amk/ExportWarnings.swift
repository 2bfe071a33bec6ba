import Logging
import Synchronization

/// What an export skipped (a FIFO, socket or device inside an appended folder, a file removed
/// before it was read), gathered from the host's diagnostics and printed once the export is
/// over, as `amk pack` prints its own warnings: the export goes on without them, and without
/// `-v` the host's logger was silent, so they vanished without a word.
///
/// `Sendable` because the list is only touched under its `Mutex`: the engine logs from its
/// packing threads.
final class ExportWarnings: Sendable {
    private let lines = Mutex<[String]>([])

    /// The logger to hand the host: with `verbose`, every diagnostic on standard error as
    /// before (warnings among them, as they happen); otherwise one that keeps the engine's
    /// warnings about files for ``print()``.
    func logger(_ label: String, verbose: Bool) -> Logger {
        if verbose { return Diagnostics.logger(label, verbose: true) }
        var logger = Logger(label: label, factory: { _ in Capture(warnings: self) })
        logger.logLevel = .warning
        return logger
    }

    /// Prints each as `amk: warning: PATH: why` on standard error. The engine escaped both when
    /// it logged them: a file name from the container, which anyone with write access chose.
    func print() {
        for line in lines.withLock({ $0 }) {
            StandardError.line("amk: warning: \(line)")
        }
    }

    private func record(_ line: String) {
        lines.withLock { $0.append(line) }
    }

    /// Keeps the warnings the packer logs with the file's path; drops the rest, as the silent
    /// logger did.
    private struct Capture: LogHandler {
        let warnings: ExportWarnings
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .warning
        var metadataProvider: Logger.MetadataProvider?

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            guard event.level == .warning, let path = event.metadata?["path"] else { return }
            warnings.record("\(path): \(event.message)")
        }
    }
}
