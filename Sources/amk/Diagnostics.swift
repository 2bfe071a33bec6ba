import Foundation
import IndexedArchive
import Logging

/// The loggers `amk` hands the libraries: silent unless `-v` asks for the diagnostics, which then
/// go to standard error (never to standard output, which may carry an archive or JSON).
enum Diagnostics {
    /// A logger writing `debug` and above to standard error when `verbose`, otherwise none.
    static func logger(_ label: String, verbose: Bool) -> Logger {
        guard verbose else { return Logger(label: label, factory: { _ in SwiftLogNoOpLogHandler() }) }
        var logger = Logger(label: label, factory: { StreamLogHandler.standardError(label: $0) })
        logger.logLevel = .debug
        return logger
    }

    /// The logger of a tar-like command (`pack`, `extract`): with `verbose`, the engine's notices
    /// (fewer workers under a memory budget) as `amk: note: ...` lines, and nothing else. `-v`
    /// there lists the members, as tar's does; the engine's debug lines came with it, and its
    /// warnings twice (as they happened, then in the summary's words).
    /// `AMK_LOG=debug` (or `trace`, `info`, ...) sends every diagnostic from that level up to
    /// standard error instead, in swift-log's format, with or without `-v`.
    static func tarLogger(_ label: String, verbose: Bool) -> Logger {
        if let level = Self.environmentLevel {
            var logger = Logger(label: label, factory: { StreamLogHandler.standardError(label: $0) })
            logger.logLevel = level
            return logger
        }
        guard verbose else { return Logger(label: label, factory: { _ in SwiftLogNoOpLogHandler() }) }
        var logger = Logger(label: label, factory: { _ in Notices() })
        logger.logLevel = .notice
        return logger
    }

    /// The level `AMK_LOG` names, if it names one.
    static var environmentLevel: Logger.Level? {
        guard let value = getenv("AMK_LOG") else { return nil }
        return Logger.Level(rawValue: String(cString: value).lowercased())
    }

    /// Prints `.notice` events alone, with their metadata, as `amk: note:` lines.
    private struct Notices: LogHandler {
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .notice
        var metadataProvider: Logger.MetadataProvider?

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            guard event.level == .notice else { return }
            let details = (event.metadata ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
            StandardError.line("amk: note: \(event.message)" + (details.isEmpty ? "" : " (\(details.joined(separator: ", ")))"))
        }
    }

    /// Tells the user that `path`'s own index was left unread (``ArchiveReader/indexSkipped``),
    /// when it was: the archive is still read, whole and checked, but from its tar stream, at the
    /// cost of one without the index.
    static func noteIndexSkipped(_ reason: String?, path: String) {
        guard let reason else { return }
        StandardError.line("amk: note: \(TerminalSafe.name(path)): \(reason)")
    }
}
