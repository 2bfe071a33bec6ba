import Foundation

/// The outcome of the last import, as the containing app reads it on its first launch.
///
/// The host records it in the container (a small JSON file in the host's folder, written
/// atomically), so it survives a restart of the app or the device. The static API works on the
/// current container (``MigrationDataContainer/current``): the one the host bound for the running
/// code, or the process's own.
public enum MigrationStatus: Sendable {
    /// The import finished.
    case success
    /// The import failed; the container was cleared. Read back from ``importStatus``, the error
    /// is an `NSError` with the domain, code and localized description of the error the importer
    /// threw (AppMigrationKit, too, coerces it to `NSError`), and its Swift type and description
    /// under ``errorTypeUserInfoKey`` and ``errorDescriptionUserInfoKey``.
    case failure(any Error)

    /// The status of the last import, or `nil` if no import has happened (or its status was
    /// cleared, or cannot be read).
    public static var importStatus: MigrationStatus? {
        read(in: .current)
    }

    /// Forgets the status, so that the app shows its migration result only once.
    public static func clearImportStatus() {
        // A status that is already gone is what the caller wants; nothing else can fail here that
        // the caller could act on, and Apple's API does not throw.
        try? FileManager.default.removeItem(at: fileURL(in: .current))
    }

    // MARK: - Persistence

    private struct Record: Codable {
        var outcome: String
        var error: RecordedImportError?
        var recorded: Date
    }

    static func fileURL(in container: MigrationDataContainer) -> URL {
        container.hostDirectory.appending(path: "import-status.json", directoryHint: .notDirectory)
    }

    static func record(_ status: MigrationStatus, in container: MigrationDataContainer) throws {
        let record: Record
        switch status {
        case .success:
            record = Record(outcome: "success", error: nil, recorded: Date())
        case .failure(let error):
            record = Record(outcome: "failure", error: RecordedImportError(error), recorded: Date())
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        // Through DurableFile: written beside, synced, renamed, and the folder synced, so that a
        // power cut leaves the old status or the new one, never an empty file.
        try DurableFile.createDirectory(container.hostDirectory.path(percentEncoded: false))
        try DurableFile.write(try encoder.encode(record), to: fileURL(in: container).path(percentEncoded: false))
    }

    static func read(in container: MigrationDataContainer) -> MigrationStatus? {
        guard let data = try? Data(contentsOf: fileURL(in: container)) else { return nil }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        guard let record = try? decoder.decode(Record.self, from: data) else { return nil }
        switch record.outcome {
        case "success":
            return .success
        case "failure":
            return .failure((record.error ?? RecordedImportError(message: "import failed", errorType: "unknown")).nsError)
        default:
            return nil
        }
    }
}
