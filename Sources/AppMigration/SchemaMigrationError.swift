public import Foundation

/// Why a schema migration did not happen. Every case names the model and the versions involved,
/// so that a report from the field says which step of which model's history to look at.
///
/// Unless the case says otherwise, the stored data and its version are exactly as they were
/// before the migration started.
public enum SchemaMigrationError: Error, Sendable, CustomStringConvertible, LocalizedError {
    /// No step is registered for `from` -> `to`; nothing ran.
    case missingStep(model: String, from: Int, to: Int)
    /// The step `from` -> `to` threw `underlying`; the data was rolled back.
    case stepFailed(model: String, from: Int, to: Int, underlying: any Error)
    /// The fully migrated data at `version` was refused by the validation; it was rolled back.
    case validationFailed(model: String, version: Int, underlying: any Error)
    /// The stored data is newer than this code understands (a downgrade); nothing ran.
    case storedVersionNewer(model: String, stored: Int, current: Int)
    /// The version file holds no version number.
    case unreadableVersion(model: String, path: String)
    /// A JSON step found data that is not a JSON object.
    case notAJSONObject(model: String, version: Int)
    /// A version string (an archive's `sourceVersion`) has no leading number.
    case unparsableVersion(model: String, version: String)
    /// Writing the migrated data failed (`underlying`), and so did restoring the backup
    /// (`rollback`). The backup is still on disk; the next migration restores it before anything
    /// else.
    case rollbackFailed(model: String, underlying: any Error, rollback: any Error)

    /// What failed, naming the model and the versions.
    public var description: String {
        switch self {
        case .missingStep(let model, let from, let to):
            "\(model): no migration step from version \(from) to \(to)"
        case .stepFailed(let model, let from, let to, let underlying):
            "\(model): migration step from version \(from) to \(to) failed, data rolled back: \(underlying)"
        case .validationFailed(let model, let version, let underlying):
            "\(model): data migrated to version \(version) failed validation, data rolled back: \(underlying)"
        case .storedVersionNewer(let model, let stored, let current):
            "\(model): stored data is at version \(stored), newer than this app's version \(current)"
        case .unreadableVersion(let model, let path):
            "\(model): \(path) does not hold a version number"
        case .notAJSONObject(let model, let version):
            "\(model): data at version \(version) is not a JSON object"
        case .unparsableVersion(let model, let version):
            "\(model): version '\(version)' does not start with a number"
        case .rollbackFailed(let model, let underlying, let rollback):
            "\(model): migration failed (\(underlying)) and restoring the backup failed too (\(rollback)); "
                + "the backup is kept and will be restored on the next attempt"
        }
    }

    /// The same as ``description``, for Foundation's error reporting.
    public var errorDescription: String? { description }
}
