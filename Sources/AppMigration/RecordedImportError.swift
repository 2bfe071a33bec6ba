public import Foundation

/// A failed import's error as the app reads it back from ``MigrationStatus/importStatus``.
///
/// The status outlives the process that recorded it, and an arbitrary `Error` cannot be stored, so
/// the host keeps what the app can show and log: the error's description and its type's name.
public struct RecordedImportError: Error, Sendable, Hashable, Codable, CustomStringConvertible, LocalizedError {
    /// The original error's description.
    public var message: String
    /// The original error's type, as `String(reflecting:)` names it.
    public var errorType: String

    /// A recorded error with this description and type name.
    public init(message: String, errorType: String) {
        self.message = message
        self.errorType = errorType
    }

    /// Records `error`.
    public init(_ error: any Error) {
        if let recorded = error as? RecordedImportError {
            self = recorded
        } else {
            self.init(message: String(describing: error), errorType: String(reflecting: type(of: error)))
        }
    }

    public var description: String { message }
    public var errorDescription: String? { message }
}
