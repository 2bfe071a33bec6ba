public import Foundation
import IndexedArchive

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Export and import streamed: the archive goes through a descriptor (a pipe or a socket) and is
/// never written to disk whole.
extension MigrationSystem {
    /// Exports onto `descriptor` (a pipe's or a socket's write end), which is written sequentially
    /// and not closed. See ``exportResources(of:named:from:request:to:sourceApp:progress:)``;
    /// a reader that goes away ends the export with an `ArchiveError` (`EPIPE`).
    @discardableResult
    public func exportResources<Extension: ResourcesExportingWithOptions>(
        of migrationExtension: Extension, named name: String? = nil,
        from container: MigrationDataContainer,
        request: MigrationRequestWithOptions<Extension.OptionsType>,
        toDescriptor descriptor: Int32,
        sourceApp: MigrationAppIdentifier? = nil,
        progress: Progress? = nil
    ) async throws -> DeviceToDeviceExportProperties {
        try await exportResources(
            of: migrationExtension, named: name, from: container, request: request,
            toDestination: .fileDescriptor(descriptor), sourceApp: sourceApp, progress: progress)
    }

    /// Imports an archive as it arrives on `descriptor` (not closed), into `container`.
    ///
    /// The blocks are extracted into a staging folder as they arrive, each verified by its check;
    /// when the stream ends, every member is verified against the archive's trailing index. Only
    /// then, with the whole archive present and verified, is `importResources(at:request:)`
    /// called. The stream's content size is unknown until its end, so instead of a preflight the
    /// extraction stops when it would need more than ``streamedImportBudget`` of the free space.
    ///
    /// A stream that breaks off, is damaged or ends without the index fails the import the way a
    /// bad archive file does: the staging folder is removed, the container is as it was (it is
    /// cleared only if the extension had started), and the status becomes `.failure`. So does a
    /// symbolic link whose target is absolute or climbs out of the staging folder
    /// (`ExtractOptions.confineSymlinks`): the importer never sees a link that leads outside.
    ///
    /// - Returns: what the importer was told: the source app and `sourceVersion`.
    /// - Throws: ``AppMigrationError`` `.unreadableArchive` (cut, damaged or unverified stream, or
    ///   an unsafe member, named in the message),
    ///   `.insufficientSpace`, `.migrationInProgress`, `.stalled`, `.terminated`; or what the
    ///   extension threw.
    @discardableResult
    public func importResources<Extension: ResourcesImporting>(
        fromDescriptor descriptor: Int32, into container: MigrationDataContainer, using migrationExtension: Extension,
        named name: String? = nil, progress: Progress? = nil
    ) async throws -> ResourcesImportRequest {
        try await importResources(
            fromDescriptor: descriptor, into: container, using: migrationExtension, named: name, progress: progress,
            onceReceived: {})
    }

    /// ``importResources(fromDescriptor:into:using:named:progress:)``, with `onceReceived` called
    /// after the whole archive has arrived and verified and before the importer runs: a transfer
    /// checks there that the stream ended with the sender's end record (the end of the descriptor
    /// alone does not say so), and by throwing, imports nothing.
    func importResources<Extension: ResourcesImporting>(
        fromDescriptor descriptor: Int32, into container: MigrationDataContainer, using migrationExtension: Extension,
        named name: String? = nil, progress: Progress? = nil, onceReceived: @escaping @Sendable () async throws -> Void
    ) async throws -> ResourcesImportRequest {
        let name = name ?? Self.defaultName(of: migrationExtension)
        let settings = self
        return try await logged(importOf: "a stream (descriptor \(descriptor))", into: container, name: name) {
            try await runImport(into: container, using: migrationExtension, name: name, progress: progress) { staging in
                let request = try await settings.receiveArchive(from: descriptor, into: container, staging: staging, name: name)
                try await onceReceived()
                return request
            }
        }
    }

    /// Removes staging folders that imports killed before their cleanup left in `container`.
    ///
    /// They hold what an archive brought, links included: the links are removed, never followed
    /// (see ``UnfollowingRemoval``), and a host folder that is itself a link is refused.
    static func removeStaleStaging(in container: MigrationDataContainer) throws {
        try UnfollowingRemoval.removeChildren(
            of: container.hostDirectory.path(percentEncoded: false),
            followingFinalLink: false
        ) { $0.hasPrefix("staging-") }
    }

    /// The share of the destination's free space a streamed import may fill with its staged
    /// extraction: the importer's copy into the container needs the rest.
    public static let streamedImportBudget = 0.5

    /// Extracts the stream into `staging` and checks that it arrived whole and verified.
    private func receiveArchive(
        from descriptor: Int32, into container: MigrationDataContainer, staging: URL,
        name: String
    ) async throws -> ResourcesImportRequest {
        let root = container.containerRootDirectory.path(percentEncoded: false)
        let available = try await HostIO.run { try freeBytes(root) }
        var options = ExtractOptions()
        options.logger = logger
        options.maxBytes = UInt64(Double(available) * Self.streamedImportBudget)
        // The importer walks the staged tree with ordinary calls, which follow links.
        options.confineSymlinks = true
        try await HostIO.run { try FileManager.default.createDirectory(at: staging, withIntermediateDirectories: true) }
        let received: ArchiveStreamReader.Result
        do {
            received = try await ArchiveStreamReader.extract(
                from: descriptor, to: staging.path(percentEncoded: false),
                options: options)
        } catch let error as ArchiveError where error.code == .unsafePath {
            throw Self.extractionError(error, extensionName: name, path: nil)
        } catch let error as ArchiveError where error.code == .limitExceeded {
            throw AppMigrationError(
                .insufficientSpace(needed: (options.maxBytes ?? 0) + 1, available: available),
                "not enough space to import: the stream holds more than half of the \(available) free bytes"
                    + (error.member.map { " (member '\(TerminalSafe.name($0))')" } ?? ""),
                extensionName: name, path: root, underlying: error)
        } catch let error as ArchiveError {
            throw AppMigrationError(
                .unreadableArchive, "the archive stream broke off or is damaged: \(error)",
                extensionName: name, underlying: error)
        } catch let error as CancellationError {
            throw error
        } catch {
            // The engine's lower layers (the tar parser) can report a damaged stream in their own
            // types; to the importing app it is the same failure.
            throw AppMigrationError(
                .unreadableArchive, "the archive stream broke off or is damaged: \(error)",
                extensionName: name, underlying: error)
        }
        guard received.indexVerified else {
            throw AppMigrationError(
                .unreadableArchive,
                "the archive stream ended without its index, so it cannot be verified as complete",
                extensionName: name)
        }
        return Self.importRequest(from: received.metadata)
    }

    /// The request an importer gets, from an archive's metadata.
    static func importRequest(from metadata: [String: String]) -> ResourcesImportRequest {
        let store = metadata[ArchiveMetadataKey.sourceStoreIdentifier].map { MigrationAppIdentifier.StoreIdentifier($0) }
        let platform = metadata[ArchiveMetadataKey.sourcePlatform].map { MigrationPlatform($0) }
        let source = MigrationAppIdentifier(
            storeIdentifier: store ?? .unknown,
            bundleIdentifier: metadata[ArchiveMetadataKey.sourceBundleIdentifier] ?? "",
            platform: platform ?? MigrationPlatform("unknown"))
        return ResourcesImportRequest(sourceAppIdentifier: source, sourceVersion: metadata[ArchiveMetadataKey.resourcesVersion] ?? "")
    }

    /// Exports from `source` and imports into `destination` at the same time, through a pipe.
    ///
    /// The import starts extracting as soon as the first block is written, so a migration takes
    /// about as long as the slower side instead of the sum of both, and the archive never exists
    /// on disk. The importer is called only once the whole archive has arrived and been verified.
    ///
    /// If either side fails, the other stops too (the exporter sees the pipe closed, the importer
    /// sees the stream cut) and the destination's status is `.failure` with nothing partial left
    /// in it. The error thrown is the cause: the export's error when the export failed, else the
    /// import's.
    ///
    /// - Returns: the export's properties and what the importer was told.
    @discardableResult
    public func migrate<Exporter: ResourcesExportingWithOptions, Importer: ResourcesImporting>(
        exporting exporter: Exporter, named exporterName: String? = nil, from source: MigrationDataContainer,
        request: MigrationRequestWithOptions<Exporter.OptionsType>,
        importing importer: Importer, named importerName: String? = nil, into destination: MigrationDataContainer,
        sourceApp: MigrationAppIdentifier? = nil, progress: Progress? = nil
    ) async throws -> (exported: DeviceToDeviceExportProperties, imported: ResourcesImportRequest) {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw TransferSocket.failure("pipe") }
        let (readEnd, writeEnd) = (ends[0], ends[1])
        // A child process started meanwhile must not inherit the write end: the reader would
        // never see the end of the stream. (Glibc's pipe2 is not visible to Swift.)
        _ = fcntl(readEnd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(writeEnd, F_SETFD, FD_CLOEXEC)
        let settings = self
        // Each side's outcome is kept, not thrown, so that one side's failure does not cancel the
        // other: each must end on its own terms (the pipe tells it) for the status to be right.
        let (exported, imported) = await withTaskGroup(of: StreamedSide.self) { group in
            group.addTask {
                defer { close(writeEnd) }
                do {
                    return .exported(
                        .success(
                            try await settings.exportResources(
                                of: exporter, named: exporterName, from: source, request: request,
                                toDestination: .fileDescriptor(writeEnd), sourceApp: sourceApp, progress: nil)))
                } catch {
                    return .exported(.failure(error))
                }
            }
            group.addTask {
                defer { close(readEnd) }
                do {
                    return .imported(
                        .success(
                            try await settings.importResources(
                                fromDescriptor: readEnd, into: destination, using: importer, named: importerName, progress: progress)))
                } catch {
                    return .imported(.failure(error))
                }
            }
            var exported: Result<DeviceToDeviceExportProperties, any Error>?
            var imported: Result<ResourcesImportRequest, any Error>?
            for await side in group {
                switch side {
                case .exported(let result): exported = result
                case .imported(let result): imported = result
                }
            }
            return (exported!, imported!)
        }
        switch (exported, imported) {
        case (.success(let properties), .success(let request)):
            return (properties, request)
        case (.failure(let exportError), .failure(let importError)):
            // An export that failed only because the importer had gone (EPIPE) is not the cause.
            if let archiveError = exportError as? ArchiveError, archiveError.code == .io(errno: EPIPE) {
                throw importError
            }
            throw exportError
        case (.failure(let error), .success):
            throw error
        case (.success, .failure(let error)):
            throw error
        }
    }
}

/// One side's outcome in ``MigrationSystem/migrate(exporting:named:from:request:importing:named:into:sourceApp:progress:)``.
private enum StreamedSide: Sendable {
    case exported(Result<DeviceToDeviceExportProperties, any Error>)
    case imported(Result<ResourcesImportRequest, any Error>)
}
