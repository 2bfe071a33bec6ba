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
}
