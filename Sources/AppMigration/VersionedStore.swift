public import Foundation

/// A folder of models, each stored as raw data beside the schema version it was written at.
///
/// For a model `m` the folder holds `m.data`, `m.version` (the version as decimal text) and, only
/// while a migration runs, `m.backup` (the data as it was before the migration's first step,
/// behind a one-line header with its version). Every file is written with ``DurableFile``, and in
/// this order: backup, data, version, then the backup is removed. So whatever instant a crash
/// hits, the next ``recover(_:)`` finds one of three states and makes it whole:
/// - a backup and the old version: the data may be old or new, so the backup is put back;
/// - a backup and the new version: the migration had finished, the backup is just removed;
/// - no backup: nothing was in flight.
public struct VersionedStore: Sendable {
    /// One model's stored bytes and the schema version they were written at.
    public struct Record: Sendable, Equatable {
        /// The stored bytes.
        public var data: Data
        /// The schema version they are in.
        public var version: Int

        /// A record of `data` at `version`.
        public init(data: Data, version: Int) {
            self.data = data
            self.version = version
        }
    }

    /// The folder that holds the store's files.
    public let directory: URL
    /// The version assumed for data that has no version file: data saved by releases that
    /// predate versioning.
    public let unversionedVersion: Int
    /// Called before every change to the disk; crash tests stop the store there.
    package var probe: DurabilityProbe?

    /// Opens (and if needed creates, durably) the store in `directory`.
    public init(directory: URL, unversionedVersion: Int = 1) throws {
        self.directory = directory
        self.unversionedVersion = unversionedVersion
        try DurableFile.createDirectory(directory.path(percentEncoded: false))
    }

    /// The model's data and version, or nil if it has no data.
    public func read(_ model: String) throws -> Record? {
        guard let data = try DurableFile.read(path(model, "data")) else { return nil }
        return Record(data: data, version: try storedVersion(model) ?? unversionedVersion)
    }

    /// Stores `data` as the model's data at `version`: first the data, durably, and only then the
    /// version, so a version number never describes data that is not on disk.
    public func write(_ data: Data, version: Int, for model: String) throws {
        try DurableFile.write(data, to: path(model, "data"), probe: probe)
        try DurableFile.write(Data(String(version).utf8), to: path(model, "version"), probe: probe)
    }

    /// Finishes or undoes a migration of `model` that a crash interrupted, and removes temporary
    /// files that crashed writes left. Migrations call this first; call it at start-up to settle
    /// the store before reading it.
    /// - Returns: whether an interrupted migration was found.
    @discardableResult
    public func recover(_ model: String) throws -> Bool {
        for kind in ["data", "version", "backup"] {
            try DurableFile.removeStaleTemporaries(for: path(model, kind))
        }
        guard let backup = try readBackup(model) else { return false }
        if (try storedVersion(model) ?? unversionedVersion) == backup.version {
            // The data may already be the migrated data: put the original back.
            if try DurableFile.read(path(model, "data")) != backup.data {
                try DurableFile.write(backup.data, to: path(model, "data"), probe: probe)
            }
        }
        try removeBackup(model)
        return true
    }

    // MARK: - For the migrator

    func writeBackup(_ record: Record, for model: String) throws {
        var bytes = Data("AMKBACKUP \(record.version)\n".utf8)
        bytes.append(record.data)
        try DurableFile.write(bytes, to: path(model, "backup"), probe: probe)
    }

    func readBackup(_ model: String) throws -> Record? {
        let backupPath = path(model, "backup")
        guard let bytes = try DurableFile.read(backupPath) else { return nil }
        guard let newline = bytes.firstIndex(of: UInt8(ascii: "\n")),
            let header = String(data: bytes[..<newline], encoding: .utf8), header.hasPrefix("AMKBACKUP "),
            let version = Int(header.dropFirst(10))
        else {
            throw SchemaMigrationError.unreadableVersion(model: model, path: backupPath)
        }
        return Record(data: Data(bytes[(newline + 1)...]), version: version)
    }

    func removeBackup(_ model: String) throws {
        try DurableFile.remove(path(model, "backup"), probe: probe)
    }

    /// The version in the model's version file, or nil if there is none.
    func storedVersion(_ model: String) throws -> Int? {
        let versionPath = path(model, "version")
        guard let bytes = try DurableFile.read(versionPath) else { return nil }
        guard let text = String(data: bytes, encoding: .utf8),
            let version = Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
        else {
            throw SchemaMigrationError.unreadableVersion(model: model, path: versionPath)
        }
        return version
    }

    func path(_ model: String, _ kind: String) -> String {
        precondition(
            !model.isEmpty && !model.utf8.contains(UInt8(ascii: "/")) && model.utf8.first != UInt8(ascii: ".")
                && !model.utf8.contains(0),
            "a model name must be a plain file name: '\(model)'")
        return directory.appending(path: "\(model).\(kind)", directoryHint: .notDirectory).path(percentEncoded: false)
    }
}
