import AppMigration
import ArgumentParser
import Foundation

/// The migration extensions built into `amk`, chosen by name with `--extension`.
///
/// A real app ships its own extension; these stand in for one so that `amk export`, `amk import`
/// and `amk demo` can move a container without writing Swift. Each is an ordinary
/// AppMigrationKit-shaped extension: the host runs it exactly as it would run an app's.
enum SampleExtension: String, CaseIterable, ExpressibleByArgument, Sendable {
    /// Documents and Library/Application Support, compressed.
    case sample
    /// The same data stored uncompressed: for media-heavy containers, where compressing is time
    /// spent for nothing.
    case sampleStored = "sample-stored"
    /// Documents only, one append per file (the directory-enumeration pattern).
    case documents

    static var allValueStrings: [String] { allCases.map(\.rawValue) }

    /// What each does, for `--help`.
    var summary: String {
        switch self {
        case .sample: "Documents and Library/Application Support, compressed"
        case .sampleStored: "the same, stored uncompressed (media-heavy containers)"
        case .documents: "Documents only, appended file by file"
        }
    }

    static var helpText: String {
        allCases.map { "\($0.rawValue): \($0.summary)" }.joined(separator: "; ")
    }

    /// Runs this extension's export of `container` into `archive`.
    func export(with system: MigrationSystem, from container: MigrationDataContainer, to archive: URL,
                destination: MigrationPlatform, sourceApp: MigrationAppIdentifier? = nil,
                progress: Progress? = nil) async throws -> DeviceToDeviceExportProperties {
        let request = MigrationRequest(destinationPlatform: destination)
        switch self {
        case .sample:
            return try await system.exportResources(of: SampleAppMigration(compressible: true), named: rawValue, from: container,
                                                    request: request, to: archive, sourceApp: sourceApp, progress: progress)
        case .sampleStored:
            return try await system.exportResources(of: SampleAppMigration(compressible: false), named: rawValue, from: container,
                                                    request: request, to: archive, sourceApp: sourceApp, progress: progress)
        case .documents:
            return try await system.exportResources(of: DocumentsFileByFileMigration(), named: rawValue, from: container,
                                                    request: request, to: archive, sourceApp: sourceApp, progress: progress)
        }
    }

    /// Runs this extension's import of `archive` into `container`.
    func importArchive(with system: MigrationSystem, from archive: URL, into container: MigrationDataContainer,
                       progress: Progress? = nil) async throws {
        switch self {
        case .sample, .sampleStored:
            try await system.importResources(from: archive, into: container, using: SampleAppMigration(compressible: true),
                                             named: rawValue, progress: progress)
        case .documents:
            try await system.importResources(from: archive, into: container, using: DocumentsFileByFileMigration(),
                                             named: rawValue, progress: progress)
        }
    }
}

/// Exports `Documents` and `Library/Application Support` under those names; imports them back by
/// moving the staged folders into place (the staging folder is in the container, so a move is a
/// rename: no second copy of the data).
struct SampleAppMigration: ResourcesExporting, ResourcesImporting {
    static let applicationSupportName = "Application Support"

    var compressible: Bool

    var resourcesSizeEstimate: Int {
        SampleFiles.regularFileBytes(under: [appContainer.documentsDirectory, appContainer.applicationSupportDirectory])
    }

    var resourcesVersion: String { "1.0" }

    var resourcesCompressible: Bool { compressible }

    func exportResources(to archiver: sending ResourcesArchiver, request: MigrationRequest) async throws {
        for (folder, name) in [(appContainer.documentsDirectory, "Documents"),
                               (appContainer.applicationSupportDirectory, Self.applicationSupportName)]
        where SampleFiles.isDirectory(folder) {
            try await archiver.appendItem(at: folder, pathInArchive: name)
        }
    }

    func importResources(at url: URL, request: ResourcesImportRequest) async throws {
        let progress = resourcesImportProgress
        let pairs = [("Documents", appContainer.documentsDirectory),
                     (Self.applicationSupportName, appContainer.applicationSupportDirectory)]
        for (index, (name, destination)) in pairs.enumerated() {
            try Task.checkCancellation()
            let staged = url.appending(path: name, directoryHint: .isDirectory)
            if SampleFiles.isDirectory(staged) {
                try SampleFiles.merge(staged, into: destination)
            }
            progress.completedUnitCount = progress.totalUnitCount * Int64(index + 1) / Int64(pairs.count)
        }
    }
}

/// Exports every regular file and link under `Documents`, one `appendItem` each, as
/// `documents/<relative path>`; imports them back into `Documents`.
struct DocumentsFileByFileMigration: ResourcesExporting, ResourcesImporting {
    var resourcesSizeEstimate: Int {
        SampleFiles.regularFileBytes(under: [appContainer.documentsDirectory])
    }

    var resourcesVersion: String { "1.0" }

    var resourcesCompressible: Bool { true }

    func exportResources(to archiver: sending ResourcesArchiver, request: MigrationRequest) async throws {
        let docs = appContainer.documentsDirectory
        let base = docs.path(percentEncoded: false)
        guard let enumerator = FileManager.default.enumerator(atPath: base) else { return }
        while let relative = enumerator.nextObject() as? String {
            let url = docs.appending(path: relative, directoryHint: .notDirectory)
            // Folders come whole with their files' paths; a folder with nothing in it is kept too.
            if SampleFiles.isDirectory(url),
               (try? FileManager.default.contentsOfDirectory(atPath: url.path(percentEncoded: false)))?.isEmpty == false {
                continue
            }
            try await archiver.appendItem(at: url, pathInArchive: "documents/\(relative)")
        }
    }

    func importResources(at url: URL, request: ResourcesImportRequest) async throws {
        let staged = url.appending(path: "documents", directoryHint: .isDirectory)
        if SampleFiles.isDirectory(staged) {
            try SampleFiles.merge(staged, into: appContainer.documentsDirectory)
        }
        resourcesImportProgress.completedUnitCount = resourcesImportProgress.totalUnitCount
    }
}

/// File helpers shared by the sample extensions.
enum SampleFiles {
    static func isDirectory(_ url: URL) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: url.path(percentEncoded: false), isDirectory: &isDirectory)
            && isDirectory.boolValue
    }

    /// Moves the contents of `source` into `destination`, merging folders and replacing files.
    static func merge(_ source: URL, into destination: URL) throws {
        let fileManager = FileManager.default
        try fileManager.createDirectory(at: destination, withIntermediateDirectories: true)
        for name in try fileManager.contentsOfDirectory(atPath: source.path(percentEncoded: false)) {
            let from = source.appending(path: name, directoryHint: .notDirectory)
            let to = destination.appending(path: name, directoryHint: .notDirectory)
            let toPath = to.path(percentEncoded: false)
            let targetExists = (try? fileManager.attributesOfItem(atPath: toPath)) != nil
            if targetExists, isDirectory(from), isDirectory(to) {
                try merge(from, into: to)
            } else {
                if targetExists { try fileManager.removeItem(at: to) }
                try fileManager.moveItem(at: from, to: to)
            }
        }
    }

    /// Bytes of the regular files under `folders` (links not followed).
    static func regularFileBytes(under folders: [URL]) -> Int {
        var total = 0
        for folder in folders {
            let base = folder.path(percentEncoded: false)
            guard let enumerator = FileManager.default.enumerator(atPath: base) else { continue }
            while let relative = enumerator.nextObject() as? String {
                guard let attributes = try? FileManager.default.attributesOfItem(atPath: base + "/" + relative),
                      attributes[.type] as? FileAttributeType == .typeRegular else { continue }
                total += (attributes[.size] as? Int) ?? 0
            }
        }
        return total
    }
}
