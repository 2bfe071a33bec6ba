public import Foundation

/// Foundation's view of the error, so `localizedDescription` (and an `NSError` bridged from it)
/// says what ``ArchiveError/description`` says, not "The operation couldn't be completed".
extension ArchiveError: LocalizedError {
    /// The same as ``ArchiveError/description``, for Foundation's error reporting.
    public var errorDescription: String? { description }

    /// The message alone, escaped for a terminal (names from an archive may hold control characters).
    public var failureReason: String? { TerminalSafe.message(message) }
}
