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

    /// Tells the user that `path`'s own index was left unread (``ArchiveReader/indexSkipped``),
    /// when it was: the archive is still read, whole and checked, but from its tar stream, at the
    /// cost of one without the index.
    static func noteIndexSkipped(_ reason: String?, path: String) {
        guard let reason else { return }
        StandardError.line("amk: note: \(TerminalSafe.name(path)): \(reason)")
    }
}
