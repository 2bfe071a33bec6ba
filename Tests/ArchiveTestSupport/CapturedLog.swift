public import Logging
import Synchronization

/// A log handler that keeps what it is given, for the assertions.
public final class CapturedLog: Sendable {
    public struct Record: Sendable {
        public var level: Logger.Level
        public var message: String
        public var metadata: [String: String]
    }

    // Mutex: handlers are called from whichever thread logs.
    private let records = Mutex<[Record]>([])

    public init() {}

    public var all: [Record] { records.withLock { $0 } }

    public func logger(level: Logger.Level = .trace) -> Logger {
        var logger = Logger(label: "test", factory: { _ in Handler(log: self) })
        logger.logLevel = level
        return logger
    }

    fileprivate func append(_ record: Record) {
        records.withLock { $0.append(record) }
    }

    public struct Handler: LogHandler {
        let log: CapturedLog
        public var metadata: Logger.Metadata = [:]
        public var logLevel: Logger.Level = .trace

        public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        public func log(event: LogEvent) {
            log.append(
                Record(
                    level: event.level, message: "\(event.message)",
                    metadata: (event.metadata ?? [:]).mapValues { "\($0)" }))
        }
    }
}
