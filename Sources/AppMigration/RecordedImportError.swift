import Foundation

/// A failed import's error as the host stores it in the container, so that the app reads it back
/// after a restart as AppMigrationKit hands it over: an `NSError` with the thrown error's domain,
/// code and localized description (``MigrationStatus/importStatus``).
///
/// An arbitrary `Error` cannot be stored, so this keeps what bridging it to `NSError` shows, plus
/// its Swift description and type name, and the `userInfo` entries that are strings.
struct RecordedImportError: Sendable, Hashable, Codable {
    /// The original error's description, `String(describing:)`.
    var message: String
    /// The original error's type, as `String(reflecting:)` names it.
    var errorType: String
    /// `NSError` domain; absent in records written before it was kept.
    var domain: String?
    /// `NSError` code.
    var code: Int?
    /// `localizedDescription`.
    var localizedDescription: String?
    /// The `userInfo` entries whose values are strings.
    var userInfo: [String: String]?

    init(message: String, errorType: String) {
        self.message = message
        self.errorType = errorType
    }

    /// Records `error`, as bridged to `NSError`.
    init(_ error: any Error) {
        let bridged = error as NSError
        var strings: [String: String] = [:]
        for (key, value) in bridged.userInfo {
            if let value = value as? String { strings[key] = value }
        }
        // An error read back from a record keeps the original's Swift type and description.
        // A cancellation (Ctrl-C or SIGTERM on the host, its caller's task cancelled) describes
        // itself as `CancellationError()`, a Swift type's name that tells the app's user nothing.
        message =
            strings[MigrationStatus.errorDescriptionUserInfoKey]
            ?? (error is CancellationError ? Self.cancelled : String(describing: error))
        errorType = strings[MigrationStatus.errorTypeUserInfoKey] ?? String(reflecting: type(of: error))
        domain = bridged.domain
        code = bridged.code
        // An `NSError`, or an error that describes itself to people, keeps its localized
        // description; for a plain Swift error `NSError` would say only "The operation could not
        // be completed", so the app gets the Swift description instead.
        let localized =
            type(of: error) is NSError.Type || error is any CustomNSError
            || bridged.userInfo[NSLocalizedDescriptionKey] != nil
            || (error as? any LocalizedError)?.errorDescription != nil
        localizedDescription = localized ? bridged.localizedDescription : message
        userInfo = strings
    }

    /// What a cancelled import records.
    static let cancelled = "the import was cancelled before it finished (interrupted, or stopped by the host's caller)"

    /// The error the app reads back.
    var nsError: NSError {
        var info: [String: Any] = [:]
        for (key, value) in userInfo ?? [:] { info[key] = value }
        info[NSLocalizedDescriptionKey] = localizedDescription ?? message
        info[MigrationStatus.errorTypeUserInfoKey] = errorType
        info[MigrationStatus.errorDescriptionUserInfoKey] = message
        return NSError(domain: domain ?? errorType, code: code ?? 0, userInfo: info)
    }
}

extension MigrationStatus {
    /// In the `userInfo` of a failure read back from ``importStatus``: the Swift type of the
    /// error the importer threw, as `String(reflecting:)` names it.
    public static let errorTypeUserInfoKey = "AMKErrorType"
    /// In the `userInfo` of a failure read back from ``importStatus``: the thrown error's
    /// `String(describing:)`.
    public static let errorDescriptionUserInfoKey = "AMKErrorDescription"
}
