// Helpers the reference examples call but do not define, so that the examples compile unchanged.
// Each is the simplest honest implementation of what its name and call site promise.
import AppMigration
import Foundation
import Synchronization

extension AppMigrationExtension {
    /// Bytes of the regular files under Documents and Application Support.
    func estimateSize() -> Int {
        [appContainer.documentsDirectory, appContainer.applicationSupportDirectory].reduce(0) { total, directory in
            total + regularFileBytes(under: directory)
        }
    }

    /// The skill's name for the same estimate.
    func calculateExportSize() -> Int {
        estimateSize()
    }

    /// The skill's import body: copy everything imported into Documents.
    func performImport(from url: URL) async throws {
        try copyContents(from: url, to: appContainer.documentsDirectory)
    }

    /// The skill's per-file import step: copy one imported file into Documents.
    func processFile(_ file: URL) throws {
        try FileManager.default.copyItem(at: file, to: appContainer.documentsDirectory.appending(path: file.lastPathComponent))
    }

    /// Copies every item of `source` but the manifest into `destination`, merging folders.
    func copyContents(from source: URL, to destination: URL) throws {
        let fm = FileManager.default
        for item in try fm.contentsOfDirectory(at: source, includingPropertiesForKeys: nil)
        where item.lastPathComponent != "manifest.json" {
            let target = destination.appending(path: item.lastPathComponent)
            var isDirectory: ObjCBool = false
            if fm.fileExists(atPath: item.path(percentEncoded: false), isDirectory: &isDirectory), isDirectory.boolValue,
                fm.fileExists(atPath: target.path(percentEncoded: false))
            {
                try copyContents(from: item, to: target)
            } else {
                try fm.copyItem(at: item, to: target)
            }
        }
    }

    private func regularFileBytes(under directory: URL) -> Int {
        guard let enumerator = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: [.fileSizeKey]) else {
            return 0
        }
        var total = 0
        for case let url as URL in enumerator {
            let values = try? url.resourceValues(forKeys: [.fileSizeKey, .isRegularFileKey])
            if values?.isRegularFile == true { total += values?.fileSize ?? 0 }
        }
        return total
    }
}

/// The manifest VersionedMigration writes first and DefensiveMigration validates.
struct ExportManifest: Codable {
    var version: String
    var exportDate: Date
    var fileCount: Int
}

extension VersionedMigration {
    /// The current (v3) format: Documents/data and Documents/assets under `data/` and `assets/`.
    func exportCurrentFormatFiles(to archiver: ResourcesArchiver) async throws {
        for folder in ["data", "assets"] {
            let url = appContainer.documentsDirectory.appending(path: folder)
            if FileManager.default.fileExists(atPath: url.path(percentEncoded: false)) {
                try await archiver.appendItem(at: url, pathInArchive: folder)
            }
        }
    }

    func countExportableFiles() -> Int {
        let docs = appContainer.documentsDirectory.path(percentEncoded: false)
        return (FileManager.default.enumerator(atPath: docs)?.allObjects.count) ?? 0
    }

    /// Writes the manifest into the container's tmp folder (inside the extension's confinement,
    /// so it may be appended) and returns its URL. It does not throw, as the call site expects: a
    /// failed write surfaces as the append's error.
    func writeManifest(_ manifest: ExportManifest) -> URL {
        let url = appContainer.temporaryDirectory.appending(path: "manifest.json")
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        if let data = try? encoder.encode(manifest) {
            try? FileManager.default.createDirectory(at: appContainer.temporaryDirectory, withIntermediateDirectories: true)
            try? data.write(to: url)
        }
        return url
    }

    /// Version 1 shipped a single `data.archive`: a JSON object from file name to contents, which
    /// lands in Documents/legacy.
    func unpackLegacyArchive(at url: URL) async throws {
        let files = try JSONDecoder().decode([String: String].self, from: Data(contentsOf: url))
        let legacy = appContainer.documentsDirectory.appending(path: "legacy")
        try FileManager.default.createDirectory(at: legacy, withIntermediateDirectories: true)
        for (name, contents) in files {
            try Data(contents.utf8).write(to: legacy.appending(path: name))
        }
    }
}

extension DefensiveMigration {
    func loadManifest(from url: URL) throws -> ExportManifest {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(ExportManifest.self, from: Data(contentsOf: url.appending(path: "manifest.json")))
    }

    func validateManifest(_ manifest: ExportManifest, sourceVersion: String) throws {
        guard manifest.version == sourceVersion else {
            throw MigrationError.importFailed("manifest version \(manifest.version) does not match \(sourceVersion)")
        }
    }

    /// Imports one file into Documents; a `.json` file must parse, anything else is copied.
    func importFile(_ file: URL) throws {
        let data = try Data(contentsOf: file)
        if file.pathExtension == "json" {
            _ = try JSONSerialization.jsonObject(with: data)
        }
        try data.write(to: appContainer.documentsDirectory.appending(path: file.lastPathComponent))
    }

    func logImportWarning(file: URL, error: any Error) {
        ImportWarnings.shared.record("\(file.lastPathComponent): \(error)")
    }
}

/// Warnings DefensiveMigration logged, for tests to read. A Mutex makes it Sendable.
final class ImportWarnings: Sendable {
    static let shared = ImportWarnings()
    private let lines = Mutex<[String]>([])

    func record(_ line: String) {
        lines.withLock { $0.append(line) }
    }

    func contains(_ text: String) -> Bool {
        lines.withLock { $0.contains { $0.contains(text) } }
    }
}
