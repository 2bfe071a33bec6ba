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
    /// Documents and Library whole, merged into the container on import (``ContainerFilesMigration``).
    case files

    static var allValueStrings: [String] { allCases.map(\.rawValue) }

    /// What each does, for `--help`.
    var summary: String {
        switch self {
        case .sample: "Documents and Library/Application Support, compressed"
        case .sampleStored: "the same, stored uncompressed (media-heavy containers)"
        case .documents: "Documents only, appended file by file"
        case .files: "Documents and Library whole, merged into the container"
        }
    }

    static var helpText: String {
        allCases.map { "\($0.rawValue): \($0.summary)" }.joined(separator: "; ")
    }

    /// Runs this extension's export of `container` into `archive`.
    func export(
        with system: MigrationSystem, from container: MigrationDataContainer, to archive: URL,
        destination: MigrationPlatform, sourceApp: MigrationAppIdentifier? = nil,
        progress: Progress? = nil
    ) async throws -> DeviceToDeviceExportProperties {
        let request = MigrationRequest(destinationPlatform: destination)
        switch self {
        case .sample:
            return try await system.exportResources(
                of: SampleAppMigration(compressible: true), named: rawValue, from: container,
                request: request, to: archive, sourceApp: sourceApp, progress: progress)
        case .sampleStored:
            return try await system.exportResources(
                of: SampleAppMigration(compressible: false), named: rawValue, from: container,
                request: request, to: archive, sourceApp: sourceApp, progress: progress)
        case .documents:
            return try await system.exportResources(
                of: DocumentsFileByFileMigration(), named: rawValue, from: container,
                request: request, to: archive, sourceApp: sourceApp, progress: progress)
        case .files:
            return try await system.exportResources(
                of: ContainerFilesMigration(), named: rawValue, from: container,
                request: request, to: archive, sourceApp: sourceApp, progress: progress)
        }
    }

    /// Runs this extension's import of `archive` into `container`.
    func importArchive(
        with system: MigrationSystem, from archive: URL, into container: MigrationDataContainer,
        progress: Progress? = nil
    ) async throws {
        switch self {
        case .sample, .sampleStored:
            try await system.importResources(
                from: archive, into: container, using: SampleAppMigration(compressible: true),
                named: rawValue, progress: progress)
        case .documents:
            try await system.importResources(
                from: archive, into: container, using: DocumentsFileByFileMigration(),
                named: rawValue, progress: progress)
        case .files:
            try await system.importResources(
                from: archive, into: container, using: ContainerFilesMigration(),
                named: rawValue, progress: progress)
        }
    }

    /// Runs this extension's export of `container` onto a paired connection to `endpoint`.
    func send(
        with system: MigrationSystem, from container: MigrationDataContainer, to endpoint: TransferEndpoint,
        pairingCode: PairingCode, idleTimeout: Duration, statusTimeout: Duration,
        progress: Progress? = nil
    ) async throws -> (exported: DeviceToDeviceExportProperties, receiverMessage: String) {
        let request = MigrationRequest(destinationPlatform: .current)
        switch self {
        case .sample, .sampleStored:
            return try await system.send(
                SampleAppMigration(compressible: self == .sample), named: rawValue, from: container,
                request: request, to: endpoint, pairingCode: pairingCode, idleTimeout: idleTimeout,
                statusTimeout: statusTimeout, progress: progress)
        case .documents:
            return try await system.send(
                DocumentsFileByFileMigration(), named: rawValue, from: container, request: request,
                to: endpoint, pairingCode: pairingCode, idleTimeout: idleTimeout,
                statusTimeout: statusTimeout, progress: progress)
        case .files:
            return try await system.send(
                ContainerFilesMigration(), named: rawValue, from: container, request: request,
                to: endpoint, pairingCode: pairingCode, idleTimeout: idleTimeout,
                statusTimeout: statusTimeout, progress: progress)
        }
    }

    /// Runs this extension's import of what the paired sender on `listener` sends.
    func receive(
        with system: MigrationSystem, into container: MigrationDataContainer, on listener: TransferListener,
        pairingCode: PairingCode, acceptTimeout: Duration?, idleTimeout: Duration, maxArchiveBytes: UInt64?,
        maxFailedPairings: Int, onRefused: @escaping @Sendable (TransferError) -> Void,
        progress: Progress? = nil
    ) async throws -> ResourcesImportRequest {
        switch self {
        case .sample, .sampleStored:
            try await system.receive(
                SampleAppMigration(compressible: true), named: rawValue, into: container, on: listener,
                pairingCode: pairingCode, acceptTimeout: acceptTimeout, idleTimeout: idleTimeout,
                maxArchiveBytes: maxArchiveBytes, maxFailedPairings: maxFailedPairings,
                onRefused: onRefused, progress: progress)
        case .documents:
            try await system.receive(
                DocumentsFileByFileMigration(), named: rawValue, into: container, on: listener,
                pairingCode: pairingCode, acceptTimeout: acceptTimeout, idleTimeout: idleTimeout,
                maxArchiveBytes: maxArchiveBytes, maxFailedPairings: maxFailedPairings,
                onRefused: onRefused, progress: progress)
        case .files:
            try await system.receive(
                ContainerFilesMigration(), named: rawValue, into: container, on: listener,
                pairingCode: pairingCode, acceptTimeout: acceptTimeout, idleTimeout: idleTimeout,
                maxArchiveBytes: maxArchiveBytes, maxFailedPairings: maxFailedPairings,
                onRefused: onRefused, progress: progress)
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

    /// The import's progress: one object, advanced as the import goes.
    let resourcesImportProgress = Progress(totalUnitCount: 100)

    var resourcesCompressible: Bool { compressible }

    func exportResources(to archiver: sending ResourcesArchiver, request: MigrationRequest) async throws {
        for (folder, name) in [
            (appContainer.documentsDirectory, "Documents"),
            (appContainer.applicationSupportDirectory, Self.applicationSupportName)
        ]
        where SampleFiles.isDirectory(folder) {
            try await archiver.appendItem(at: folder, pathInArchive: name)
        }
    }

    func importResources(at url: URL, request: ResourcesImportRequest) async throws {
        let progress = resourcesImportProgress
        let pairs = [
            ("Documents", appContainer.documentsDirectory),
            (Self.applicationSupportName, appContainer.applicationSupportDirectory)
        ]
        for (index, (name, destination)) in pairs.enumerated() {
            try Task.checkCancellation()
            try SampleFiles.mergeReceivedFolder(named: name, in: url, into: destination)
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

    /// The import's progress: one object, advanced as the import goes.
    let resourcesImportProgress = Progress(totalUnitCount: 100)

    var resourcesCompressible: Bool { true }

    func exportResources(to archiver: sending ResourcesArchiver, request: MigrationRequest) async throws {
        let docs = appContainer.documentsDirectory
        let base = docs.path(percentEncoded: false)
        guard let enumerator = FileManager.default.enumerator(atPath: base) else { return }
        while let relative = enumerator.nextObject() as? String {
            let url = docs.appending(path: relative, directoryHint: .notDirectory)
            // Folders come whole with their files' paths; a folder with nothing in it is kept too.
            if SampleFiles.isDirectory(url),
                (try? FileManager.default.contentsOfDirectory(atPath: url.path(percentEncoded: false)))?.isEmpty == false
            {
                continue
            }
            try await archiver.appendItem(at: url, pathInArchive: "documents/\(relative)")
        }
    }

    func importResources(at url: URL, request: ResourcesImportRequest) async throws {
        try SampleFiles.mergeReceivedFolder(named: "documents", in: url, into: appContainer.documentsDirectory)
        resourcesImportProgress.completedUnitCount = resourcesImportProgress.totalUnitCount
    }
}

/// A received item an extension refuses to merge: a symbolic link (or a file) where it expects a
/// folder. Following it would merge whatever it points to; moving it into place would put a link
/// where the app keeps a folder.
struct RefusedReceivedItem: Error, CustomStringConvertible {
    /// The item's path in the staging folder.
    var path: String
    /// The name the extension expected a folder under.
    var name: String
    var found: String

    var description: String {
        "\(path): the received '\(name)' is \(found), not a folder; refused (links from an archive are never followed)"
    }
}

/// File helpers shared by the built-in extensions.
///
/// On the import side, nothing here follows a symbolic link: the staged tree came from an archive,
/// and although the host refuses links that lead out of it, a link that stays inside would still
/// make a following merge read or move the wrong files. Every decision is made on `lstat`
/// (`attributesOfItem`, which does not follow), a link is moved as the link it is (`rename`
/// moves the link itself), and a link standing where a folder is expected is refused.
enum SampleFiles {
    /// What `lstat` says is at a path.
    enum ItemKind: Equatable {
        case missing, directory, symbolicLink, other
    }

    /// What is at `url`, the final link not followed.
    static func kind(of url: URL) -> ItemKind {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: url.path(percentEncoded: false)) else {
            return .missing
        }
        switch attributes[.type] as? FileAttributeType {
        case .typeDirectory?: return .directory
        case .typeSymbolicLink?: return .symbolicLink
        default: return .other
        }
    }

    /// Whether `url` is a directory, following a final link: for the export side, where the
    /// container is the app's own and the engine stores whatever it is given without following.
    static func isDirectory(_ url: URL) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: url.path(percentEncoded: false), isDirectory: &isDirectory)
            && isDirectory.boolValue
    }

    /// Merges the received folder `name` under `staging` into `destination`: nothing to do when
    /// it was not received, a ``RefusedReceivedItem`` when it is not a real folder.
    static func mergeReceivedFolder(named name: String, in staging: URL, into destination: URL) throws {
        let staged = staging.appending(path: name, directoryHint: .notDirectory)
        switch kind(of: staged) {
        case .missing:
            return
        case .directory:
            try merge(staged, into: destination)
        case .symbolicLink:
            throw RefusedReceivedItem(path: staged.path(percentEncoded: false), name: name, found: "a symbolic link")
        case .other:
            throw RefusedReceivedItem(path: staged.path(percentEncoded: false), name: name, found: "a file")
        }
    }

    /// Moves the contents of the real folder `source` into `destination`, merging folders and
    /// replacing anything else of the same name.
    ///
    /// Only two real folders are merged; in every other case the received item replaces what is
    /// there (a link in the container is removed as a link) and is moved as it is, so a received
    /// link arrives as a link and nothing is read or moved through one. `destination` is made a
    /// real folder first if it is not one.
    static func merge(_ source: URL, into destination: URL) throws {
        let fileManager = FileManager.default
        switch kind(of: destination) {
        case .directory:
            break
        case .missing:
            try fileManager.createDirectory(at: destination, withIntermediateDirectories: true)
        case .symbolicLink, .other:
            try fileManager.removeItem(at: destination)
            try fileManager.createDirectory(at: destination, withIntermediateDirectories: true)
        }
        // `source` is a real folder (checked by the caller, or below), so listing it lists it.
        for name in try fileManager.contentsOfDirectory(atPath: source.path(percentEncoded: false)) {
            let from = source.appending(path: name, directoryHint: .notDirectory)
            let to = destination.appending(path: name, directoryHint: .notDirectory)
            let target = kind(of: to)
            if kind(of: from) == .directory, target == .directory {
                try merge(from, into: to)
            } else {
                // FileManager removes a link itself, not its target.
                if target != .missing { try fileManager.removeItem(at: to) }
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
                    attributes[.type] as? FileAttributeType == .typeRegular
                else { continue }
                total += (attributes[.size] as? Int) ?? 0
            }
        }
        return total
    }
}
