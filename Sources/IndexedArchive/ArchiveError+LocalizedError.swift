public import Foundation

/// Foundation's view of the error, so `localizedDescription` (and an `NSError` bridged from it)
/// says what ``ArchiveError/description`` says, not "The operation couldn't be completed".
extension ArchiveError: LocalizedError {
    public var errorDescription: String? { description }

    public var failureReason: String? { TerminalSafe.message(message) }
}
