public import Foundation
public import IndexedArchive
public import Logging
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The extension host: the part of the system that AppMigrationKit keeps out of sight.
///
/// It runs an extension's export under a `Watchdog` and streams what the extension appends into
/// an indexed `.tar.xz`; and it imports such an archive into a container through an extension:
/// free-space preflight, exclusive lock, safe extraction into a staging folder, progress, and on
/// failure a cleared container and a recorded ``MigrationStatus``.
///
/// ```swift
/// let system = MigrationSystem()
/// let properties = try await system.exportResources(
///     of: MyMigration(), from: sourceContainer,
///     request: MigrationRequest(destinationPlatform: .android), to: archiveURL)
/// try await system.importResources(from: archiveURL, into: destinationContainer, using: MyMigration())
/// ```
///
/// Where the extension's code runs depends on what it is given. An ``ExtensionExecutable`` runs
/// in a process of its own, which a stall or a cancellation ends with SIGKILL of its process
/// group if it does not stop within the grace period; the host answers only after reaping it. Any
/// other extension value runs in this process, on threads of its own: the caller still gets its
/// answer on time, but code that ignores cancellation cannot be terminated and keeps running
/// after the answer (choose this for tests, or where no child process may be started).
public struct MigrationSystem: Sendable {
    /// Stall timeouts for exports. The extension's own code is the stage `.extensionCode`: it is
    /// watched from the start of `exportResources` except while an `appendItem` runs, when the
    /// engine's stages (read, compress, write) are watched instead.
    public var watchdogPolicy: WatchdogPolicy
    /// Stall timeouts for imports (stage `.extensionCode`). An importer is stuck, and is cancelled,
    /// when for a whole timeout it neither advanced its `resourcesImportProgress` nor used a
    /// millisecond of CPU time on the threads that run its code (see ``ResourcesImporting``): a
    /// silent importer that works is never stopped, one that waits on nothing is.
    public var importWatchdogPolicy: WatchdogPolicy
    /// LZMA preset for compressible exports, 0 (fastest) to 9 (smallest).
    public var compressionPreset: Int
    /// Uncompressed bytes per xz block (at least 1 MiB).
    public var chunkSize: Int
    /// Compressing threads.
    public var workers: Int
    /// The free bytes an import needs, from the bytes the archive holds. By default twice the
    /// content (rounded up to 4 KiB blocks, one block per member, 1 MiB spare): once for the
    /// staged extraction and once for the extension's copy into the container.
    ///
    /// The content size is what the archive claims, so a replacement must not trap on any value:
    /// saturate (`UInt64.max` is "more than any disk"), as the default does.
    public var requiredImportBytes: @Sendable (_ contentBytes: UInt64, _ members: Int) -> UInt64
    /// Free bytes on the file system holding a path; `statvfs` by default, replaced by tests.
    public var freeBytes: @Sendable (_ path: String) throws -> UInt64
    /// Called on the compressing thread before each chunk of an export is compressed; tests use
    /// it to make compression slow. Nil, and free, in production.
    package var compressionHook: (@Sendable (_ sequence: Int) throws -> Void)? = nil
    /// Where the host's diagnostics go: each export and import as it starts (`debug`) and ends
    /// (`info`, or `error` with why, a stall or a termination named), and the engine's own
    /// (handed to its pack and extraction). Silent by default, as a library should be: `amk -v`
    /// hands one that writes to standard error.
    public var logger = Logger(label: "AppMigration.host", factory: { _ in SwiftLogNoOpLogHandler() })

    /// A host with these settings; the defaults suit real data on real disks.
    public init(
        watchdogPolicy: WatchdogPolicy = WatchdogPolicy(),
        importWatchdogPolicy: WatchdogPolicy = WatchdogPolicy(defaultStallTimeout: .seconds(600)),
        compressionPreset: Int = 6, chunkSize: Int = PackOptions().chunkSize, workers: Int = PackOptions.activeCores
    ) {
        self.watchdogPolicy = watchdogPolicy
        self.importWatchdogPolicy = importWatchdogPolicy
        self.compressionPreset = compressionPreset
        self.chunkSize = chunkSize
        self.workers = workers
        self.requiredImportBytes = { contentBytes, members in
            // Archive-supplied sizes: saturate instead of trapping, so that an archive claiming
            // nearly 2^64 bytes is refused by the preflight like any other too-large archive.
            let blocks = UInt64(max(members, 0)).multipliedReportingOverflow(by: 4096)
            let staged = contentBytes.addingReportingOverflow(blocks.partialValue)
            let twice = staged.partialValue.multipliedReportingOverflow(by: 2)
            let total = twice.partialValue.addingReportingOverflow(1 << 20)
            return blocks.overflow || staged.overflow || twice.overflow || total.overflow ? .max : total.partialValue
        }
        self.freeBytes = MigrationSystem.statvfsFreeBytes
    }

    // MARK: - Export

    /// Runs `migrationExtension`'s export from `container` into a new archive at `archive`.
    ///
    /// The archive records the extension's `resourcesVersion` and size estimate, the source app
    /// and the destination platform in its metadata; it is compressed or stored as
    /// `resourcesCompressible` says. The container is locked for the export's duration.
    ///
    /// - Parameters:
    ///   - migrationExtension: the app's export extension.
    ///   - name: the extension's name in errors and metadata; by default its type's name.
    ///   - container: the app's data container, read (and locked) for the export.
    ///   - request: what the system asks for: the destination platform and the options.
    ///   - archive: where the archive is written; nothing is left there if the export fails.
    ///   - sourceApp: the exporting app's identity, recorded for the importer; by default the
    ///     container's bundle identifier on ``MigrationPlatform/current``.
    ///   - progress: gets a child progress, counting the bytes stored against the size estimate,
    ///     for all its remaining units; its total is set to the size estimate if it has none.
    ///     It is complete when the export is.
    /// - Returns: the export's sizes and version.
    /// - Throws: ``AppMigrationError`` `.stalled` (the extension, or a stage working for it, made
    ///   no progress for the stall timeout) or `.terminated` (it was cancelled and did not stop,
    ///   or returned as if it had not been cancelled), `.outsideContainer`, `.migrationInProgress`;
    ///   `CancellationError` if the caller cancelled; or what the extension threw. After any
    ///   failure nothing is left at `archive`.
    @discardableResult
    public func exportResources<Extension: ResourcesExportingWithOptions>(
        of migrationExtension: Extension, named name: String? = nil,
        from container: MigrationDataContainer,
        request: MigrationRequestWithOptions<Extension.OptionsType>,
        to archive: URL,
        sourceApp: MigrationAppIdentifier? = nil,
        progress: Progress? = nil
    ) async throws -> DeviceToDeviceExportProperties {
        try await exportResources(
            of: migrationExtension, named: name, from: container, request: request,
            toDestination: .file(archive.path(percentEncoded: false)), sourceApp: sourceApp,
            progress: progress)
    }

    /// The export, into a file or onto a descriptor (a pipe or a socket, written without seeking;
    /// see `MigrationSystem+Streaming.swift`).
    func exportResources<Extension: ResourcesExportingWithOptions>(
        of migrationExtension: Extension, named name: String?,
        from container: MigrationDataContainer,
        request: MigrationRequestWithOptions<Extension.OptionsType>,
        toDestination destination: ArchiveDestination,
        sourceApp: MigrationAppIdentifier?,
        progress: Progress?
    ) async throws -> DeviceToDeviceExportProperties {
        let name = name ?? Self.defaultName(of: migrationExtension)
        guard container.isConfigured else {
            throw AppMigrationError(
                .notAContainer,
                "no container is configured: outside a host, MigrationDataContainer.current "
                    + "needs AMK_CONTAINER_ROOT (or pass a container)", extensionName: name)
        }
        let confinement = try ContainerConfinement(container: container, extensionName: name)
        let settings = self
        let logger = logger
        let metadata: Logger.Metadata = [
            "extension": "\(TerminalSafe.name(name))",
            "container": "\(TerminalSafe.name(container.containerRootDirectory.path(percentEncoded: false)))"
        ]
        logger.debug("export starting", metadata: metadata)
        do {
            let properties = try await lockedExport(
                migrationExtension, name: name, container: container, confinement: confinement,
                request: request, destination: destination, sourceApp: sourceApp,
                progress: progress, settings: settings)
            logger.info("export finished", metadata: metadata.merging(["bytes": "\(properties.uncompressedBytes)"]) { $1 })
            return properties
        } catch is CancellationError {
            logger.debug("export cancelled", metadata: metadata)
            throw CancellationError()
        } catch {
            logger.error("export failed", metadata: metadata.merging(["error": "\(TerminalSafe.message("\(error)"))"]) { $1 })
            throw error
        }
    }

    private func lockedExport<Extension: ResourcesExportingWithOptions>(
        _ migrationExtension: Extension, name: String, container: MigrationDataContainer, confinement: ContainerConfinement,
        request: MigrationRequestWithOptions<Extension.OptionsType>, destination: ArchiveDestination,
        sourceApp: MigrationAppIdentifier?, progress: Progress?, settings: MigrationSystem
    ) async throws -> DeviceToDeviceExportProperties {
        try await ContainerLock.withLock(on: container, extensionName: name) {
            let outcome: ExportOutcome
            do {
                outcome = try await Watchdog.supervise(policy: Self.supervisionPolicy(settings.watchdogPolicy, for: migrationExtension)) {
                    watchdog in
                    try await MigrationDataContainer.withCurrent(container) {
                        try await settings.runExport(
                            migrationExtension, name: name, container: container,
                            confinement: confinement, request: request, destination: destination,
                            sourceApp: sourceApp, progress: progress, watchdog: watchdog)
                    }
                }
            } catch let error as ArchiveError where error.code == .stalled || error.code == .terminated {
                throw Self.hostError(error, extensionName: name)
            }
            switch outcome {
            case .finished(let properties):
                if let progress { progress.completedUnitCount = progress.totalUnitCount }
                return properties
            case .returnedAfterCancellation:
                throw AppMigrationError(
                    .terminated, "terminated: cancellation ignored: returned normally after being cancelled",
                    extensionName: name)
            }
        }
    }

    private enum ExportOutcome: Sendable {
        case finished(DeviceToDeviceExportProperties)
        case returnedAfterCancellation
    }

    /// Thrown inside the builder to abandon the archive when the extension returned normally after
    /// being cancelled; it never leaves ``exportResources(of:named:from:request:to:sourceApp:progress:)``.
    private struct ReturnedAfterCancellation: Error {}

    private func runExport<Extension: ResourcesExportingWithOptions>(
        _ migrationExtension: Extension, name: String, container: MigrationDataContainer,
        confinement: ContainerConfinement, request: MigrationRequestWithOptions<Extension.OptionsType>,
        destination: ArchiveDestination, sourceApp: MigrationAppIdentifier?, progress: Progress?, watchdog: Watchdog
    ) async throws -> ExportOutcome {
        if let executable = migrationExtension as? ExtensionExecutable {
            let options = Dictionary(uniqueKeysWithValues: request.options.map { ($0.key.rawValue, $0.value) })
            return try await ExtensionSession.run(
                executable, name: name, container: container, gracePeriod: watchdogPolicy.gracePeriod, watchdog: watchdog
            ) { session in
                // Starting the process and its properties are extension code: watch them.
                watchdog.begin(.extensionCode)
                let properties = try await session.startExport(
                    destinationPlatform: request.destinationPlatform, options: options, watchdog: watchdog)
                watchdog.end(.extensionCode)
                return try await pack(
                    name: name, container: container, confinement: confinement, destinationPlatform: request.destinationPlatform,
                    destination: destination, sourceApp: sourceApp, progress: progress, watchdog: watchdog,
                    estimate: properties.sizeEstimate, version: properties.version, compressible: properties.compressible
                ) { archiver in
                    try await session.serveAppends(into: archiver)
                    try await session.awaitCleanExit()
                    // The process finished before any cancel reached it: the call is cancelled,
                    // but the extension ignored nothing (ExtensionSession.run says the same).
                    try Task.checkCancellation()
                }
            }
        }
        let executor = ExtensionExecutor(name: name)
        // The properties are extension code too: watch them. Apple's size estimate walks the
        // container, which in a large one outlasts a stall timeout: as for an import, a
        // millisecond of CPU time on the extension's thread is a sign of life, and only an
        // estimate that waits on nothing for a whole timeout is stalled.
        watchdog.begin(.extensionCode)
        let seen = Mutex(ImportSignsOfLife(cpu: executor.cpuNanoseconds()))
        let probe = watchdog.addProbe(for: .extensionCode) {
            let cpu = executor.cpuNanoseconds()
            return seen.withLock { $0.see(cpu: cpu, completed: 0).working }
        }
        let (estimate, version, compressible) = await withTaskExecutorPreference(executor) {
            (
                await migrationExtension.resourcesSizeEstimate, migrationExtension.resourcesVersion,
                migrationExtension.resourcesCompressible
            )
        }
        watchdog.removeProbe(probe)
        watchdog.end(.extensionCode)
        return try await pack(
            name: name, container: container, confinement: confinement, destinationPlatform: request.destinationPlatform,
            destination: destination, sourceApp: sourceApp, progress: progress, watchdog: watchdog,
            estimate: estimate, version: version, compressible: compressible
        ) { archiver in
            try await withTaskExecutorPreference(executor) {
                try await migrationExtension.exportResources(to: archiver, request: request)
            }
        }
    }

    /// The export's archive: packs what `produce` appends, under `watchdog`, with the metadata
    /// the extension's properties give.
    private func pack(
        name: String, container: MigrationDataContainer, confinement: ContainerConfinement,
        destinationPlatform: MigrationPlatform, destination: ArchiveDestination, sourceApp: MigrationAppIdentifier?,
        progress: Progress?, watchdog: Watchdog, estimate: Int, version: String, compressible: Bool,
        produce: @Sendable (ResourcesArchiver) async throws -> Void
    ) async throws -> ExportOutcome {
        try Task.checkCancellation()

        let source =
            sourceApp
            ?? MigrationAppIdentifier(
                storeIdentifier: .unknown, bundleIdentifier: container.bundleIdentifier,
                platform: .current)
        var options = PackOptions()
        // What is read is checked again once open: a folder swapped for a link after
        // `appendItem`'s check must not bring in files from outside the container.
        options.fileSystem = options.fileSystem.confined(toAnyOf: confinement.allowedRoots)
        options.logger = logger
        options.preset = compressionPreset
        options.chunkSize = chunkSize
        options.workers = workers
        options.compressible = compressible
        options.watchdog = watchdog
        options.compressionHook = compressionHook
        options.metadata = [
            ArchiveMetadataKey.resourcesVersion: version,
            // A negative estimate means nothing; the archive says 0, as amk shows it.
            ArchiveMetadataKey.sizeEstimate: String(max(estimate, 0)),
            ArchiveMetadataKey.compressible: String(compressible),
            ArchiveMetadataKey.sourceBundleIdentifier: source.bundleIdentifier,
            ArchiveMetadataKey.sourcePlatform: source.platform.rawValue,
            ArchiveMetadataKey.sourceStoreIdentifier: source.storeIdentifier.rawValue,
            ArchiveMetadataKey.destinationPlatform: destinationPlatform.rawValue,
            ArchiveMetadataKey.extensionName: name
        ]
        // The engine counts bytes; the caller's progress keeps its own units. As Foundation
        // intends, the bytes go into a child (its total the size estimate) that stands for all the
        // caller's remaining units.
        var bytes: Progress?
        if let progress {
            if progress.totalUnitCount <= 0 { progress.totalUnitCount = Int64(max(estimate, 1)) }
            let child = Progress(totalUnitCount: Int64(max(estimate, 1)))
            progress.addChild(child, withPendingUnitCount: max(progress.totalUnitCount - progress.completedUnitCount, 0))
            options.progress = child
            bytes = child
        }
        do {
            let (_, summary) = try await ArchivePacker.withBuilder(to: destination, options: options) { builder in
                let archiver = ResourcesArchiver(builder: builder, watchdog: watchdog, confinement: confinement)
                watchdog.begin(.extensionCode)
                do {
                    try await produce(archiver)
                } catch {
                    watchdog.end(.extensionCode)
                    throw error
                }
                watchdog.end(.extensionCode)
                // Finishing the archive now would deliver an export that was called off.
                if Task.isCancelled { throw ReturnedAfterCancellation() }
            }
            if let bytes { bytes.completedUnitCount = max(bytes.completedUnitCount, bytes.totalUnitCount) }
            return .finished(
                DeviceToDeviceExportProperties(
                    uncompressedBytes: Int(summary.tarBytes),
                    compressedBytes: compressible ? Int(summary.archiveBytes) : nil,
                    sizeEstimate: estimate, version: version))
        } catch is ReturnedAfterCancellation {
            // The archive is abandoned; the supervisor, which cancelled us, reports the return as
            // a termination.
            return .returnedAfterCancellation
        }
    }

    /// The watchdog's verdict, said about the extension.
    static func hostError(_ error: ArchiveError, extensionName: String) -> AppMigrationError {
        switch error.code {
        case .stalled:
            let detail = error.message.hasPrefix("stalled: ") ? String(error.message.dropFirst(9)) : error.message
            return AppMigrationError(
                .stalled, "stalled, so the migration was cancelled: \(detail)",
                extensionName: extensionName, underlying: error)
        default:
            var detail = error.message.hasPrefix("terminated: ") ? String(error.message.dropFirst(12)) : error.message
            if !detail.hasPrefix("cancellation ignored") { detail = "cancellation ignored: \(detail)" }
            return AppMigrationError(.terminated, "terminated: \(detail)", extensionName: extensionName, underlying: error)
        }
    }

    // MARK: - Import

    /// Imports the archive at `archive` into `container` through `migrationExtension`.
    ///
    /// In order: take the container's lock; check that the file system has the space the
    /// archive's content needs (``requiredImportBytes``); extract the archive safely into a
    /// staging folder inside the container; call `importResources(at:request:)` with the source
    /// app and `sourceVersion` from the archive's metadata, under a watchdog, mirroring the
    /// extension's progress into `progress`; remove the staging folder.
    /// On success the import status becomes `.success`. On failure the container's data (all but
    /// the host's own folder; app-group containers are outside it and untouched) is removed, the
    /// status becomes `.failure`, and the error is rethrown.
    ///
    /// Extraction confines symbolic links (`ExtractOptions.confineSymlinks`): a link whose
    /// target is absolute or climbs out of the staging folder fails the import before the
    /// extension runs, so an importer that lists or moves the staged folders with ordinary calls
    /// (which follow links) cannot be led outside. Failures before the extension runs leave the
    /// container as it was; only the staging folder is removed, without following its links.
    ///
    /// - Throws: ``AppMigrationError`` `.insufficientSpace(needed:available:)` (also when the
    ///   archive's sizes add up past 2^64), `.migrationInProgress`, `.unreadableArchive` (also for
    ///   an unsafe member, named in the message), `.stalled`, `.terminated`; or what the extension
    ///   threw.
    public func importResources<Extension: ResourcesImporting>(
        from archive: URL, into container: MigrationDataContainer, using migrationExtension: Extension,
        named name: String? = nil, progress: Progress? = nil
    ) async throws {
        let name = name ?? Self.defaultName(of: migrationExtension)
        _ = try await logged(importOf: archive.path(percentEncoded: false), into: container, name: name) {
            try await runImport(into: container, using: migrationExtension, name: name, progress: progress) { staging in
                try await prepareImport(from: archive, into: container, staging: staging, name: name)
            }
        }
    }

    /// Runs an import, logging its start, its end and, if it failed, why.
    func logged<Result: Sendable>(
        importOf source: String, into container: MigrationDataContainer, name: String,
        _ body: () async throws -> Result
    ) async throws -> Result {
        let metadata: Logger.Metadata = [
            "extension": "\(TerminalSafe.name(name))", "source": "\(TerminalSafe.name(source))",
            "container": "\(TerminalSafe.name(container.containerRootDirectory.path(percentEncoded: false)))"
        ]
        logger.debug("import starting", metadata: metadata)
        do {
            let result = try await body()
            logger.info("import finished", metadata: metadata)
            return result
        } catch is CancellationError {
            logger.debug("import cancelled", metadata: metadata)
            throw CancellationError()
        } catch {
            logger.error(
                "import failed; the container was left or cleared as the import status says",
                metadata: metadata.merging(["error": "\(TerminalSafe.message("\(error)"))"]) { $1 })
            throw error
        }
    }

    /// The one import flow, for an archive file and a stream alike: check that the container is
    /// one the host may clear, take its lock, remove staging folders a killed import left, let
    /// `stage` put the archive's content into a new staging folder (returning the request from
    /// the archive's metadata), run the importer under the watchdog, and record the outcome.
    ///
    /// A failure before the importer runs leaves the container as it was (only the staging folder
    /// is removed); one after clears the container. Either is recorded in the import status.
    func runImport<Extension: ResourcesImporting>(
        into container: MigrationDataContainer, using migrationExtension: Extension, name: String, progress: Progress?,
        stage: (_ staging: URL) async throws -> ResourcesImportRequest
    ) async throws -> ResourcesImportRequest {
        let progress = progress ?? Progress(totalUnitCount: 100)
        if progress.totalUnitCount <= 0 { progress.totalUnitCount = 100 }
        let total = progress.totalUnitCount
        // A failed import clears the container: only into one the host knows.
        try await HostIO.run { try container.checkKnown(extensionName: name) }
        return try await ContainerLock.withLock(on: container, extensionName: name) {
            let staging = container.hostDirectory.appending(path: "staging-\(UUID().uuidString)", directoryHint: .isDirectory)
            // What the root and the host's folder are now: after the extension has run, the host
            // clears and records only if they still are (see ``PinnedContainer``).
            let pinned = try await HostIO.run { try PinnedContainer(container, extensionName: name) }
            var extensionStarted = false
            let request: ResourcesImportRequest
            do {
                // An import killed mid-way could not remove its staging folder; under the lock no
                // other import is running, so any staging folder left is such a leftover.
                try await HostIO.run { try Self.removeStaleStaging(in: container) }
                request = try await stage(staging)
                progress.completedUnitCount = total / 4
                extensionStarted = true
                try await Self.runImporter(
                    migrationExtension, name: name, at: staging, request: request, container: container,
                    policy: importWatchdogPolicy, progress: progress, progressRange: (total / 4, total))
                await HostIO.runToCompletion { Self.removeStaging(staging, of: container) }
            } catch {
                // Until the extension runs, only the staging folder has been written and the
                // container is as it was; after, clear what the extension may have half-written.
                let cleared = extensionStarted
                let replaced = await HostIO.runToCompletion { () -> AppMigrationError? in
                    // A root or host folder swapped for a link would have the clearing and the
                    // status land in whatever the link names: another container, any folder.
                    if let replaced = pinned.replacement(in: container, extensionName: name, after: error) { return replaced }
                    Self.removeStaging(staging, of: container)
                    if cleared { Self.clearContainer(container, pinned: pinned) }
                    // The import's own error is what the caller must see; a status that cannot
                    // be written (a full disk) is secondary to it, but the previous import's must
                    // not stay: an app read "success" after this import failed. Removing a file
                    // takes no space.
                    do {
                        try MigrationStatus.record(.failure(error), in: container)
                        // cancellation: the status write is a file system call, not a task; the import's error is thrown
                    } catch {
                        try? FileManager.default.removeItem(at: MigrationStatus.fileURL(in: container))
                    }
                    return nil
                }
                throw replaced ?? error
            }
            // Outside the clause above: the data arrived whole, and a status that cannot be
            // written is no reason to clear it.
            try await HostIO.run {
                if let replaced = pinned.replacement(in: container, extensionName: name, after: nil) { throw replaced }
                try MigrationStatus.record(.success, in: container)
            }
            progress.completedUnitCount = total
            return request
        }
    }

    /// Opens and checks the archive, preflights the space, and extracts it into `staging`.
    private func prepareImport(
        from archive: URL, into container: MigrationDataContainer, staging: URL,
        name: String
    ) async throws -> ResourcesImportRequest {
        let path = archive.path(percentEncoded: false)
        let reader: ArchiveReader
        let metadata: [String: String]
        let entries: [ArchiveEntry]
        do {
            reader = try await ArchiveReader.open(path: path)
            metadata = try await reader.metadata()
            entries = try await reader.entries()
        } catch let error as CancellationError {
            throw error
        } catch {
            // An ArchiveError, or a lower layer's own type (the tar parser's) for a damaged archive.
            throw AppMigrationError(
                .unreadableArchive, "cannot read the archive: \(error)", extensionName: name, path: path,
                underlying: error)
        }
        // The sizes are the archive's claims: summed without trapping. A sum past 2^64 needs
        // more space than any disk has, and is refused as such.
        var content: UInt64? = 0
        for entry in entries {
            guard let sum = content?.addingReportingOverflow(entry.size), !sum.overflow else {
                content = nil
                break
            }
            content = sum.partialValue
        }
        let root = container.containerRootDirectory.path(percentEncoded: false)
        let available = try await HostIO.run { try freeBytes(root) }
        let needed = content.map { requiredImportBytes($0, entries.count) } ?? .max
        // `.max` is "more than any disk", whatever the disk says it has.
        if content == nil || needed == .max || available < needed {
            let claim: String
            if let content {
                claim = needed == .max ? "the members claim \(content) bytes, more than any disk holds" : "\(needed) bytes needed"
            } else {
                claim = "the members claim more than 2^64 bytes in all"
            }
            throw AppMigrationError(
                .insufficientSpace(needed: needed, available: available),
                "not enough space to import: \(claim), \(available) available",
                extensionName: name, path: container.containerRootDirectory.path(percentEncoded: false))
        }
        try await HostIO.run { try FileManager.default.createDirectory(at: staging, withIntermediateDirectories: true) }
        try await Self.extractAsImport(
            reader, to: staging, declaredContent: content ?? 0, logger: logger, extensionName: name, path: path)
        return Self.importRequest(from: metadata)
    }

    /// Extracts `reader`'s archive into `folder` as an import stages it (``AppMigrationTester``
    /// extracts exports the same way, so that its round trip fails where an import would).
    /// `declaredContent`, the sum of the members' sizes, has been held against the free space:
    /// the extraction may write that much however far the archive compresses it.
    static func extractAsImport(
        _ reader: ArchiveReader, to folder: URL, declaredContent: UInt64, logger: Logger? = nil, extensionName: String, path: String?
    ) async throws {
        var options = ExtractOptions()
        if let logger { options.logger = logger }
        options.declaredContentAllowance = declaredContent
        // The importer walks the staged tree with ordinary calls, which follow links.
        options.confineSymlinks = true
        do {
            try await reader.extract(to: folder.path(percentEncoded: false), options: options)
        } catch let error as CancellationError {
            throw error
        } catch {
            throw Self.extractionError(error, extensionName: extensionName, path: path)
        }
    }

    /// Calls `importResources(at:request:)` under the watchdog with `container` current, mirroring
    /// the extension's progress into `progress` between `progressRange`'s bounds.
    static func runImporter<Extension: ResourcesImporting>(
        _ migrationExtension: Extension, name: String, at staged: URL, request: ResourcesImportRequest,
        container: MigrationDataContainer, policy: WatchdogPolicy, progress: Progress?, progressRange: (Int64, Int64)
    ) async throws {
        do {
            try await Watchdog.supervise(policy: supervisionPolicy(policy, for: migrationExtension)) { watchdog in
                if let executable = migrationExtension as? ExtensionExecutable {
                    return try await ExtensionSession.run(
                        executable, name: name, container: container, gracePeriod: policy.gracePeriod, watchdog: watchdog
                    ) { session in
                        watchdog.begin(.extensionCode)
                        defer { watchdog.end(.extensionCode) }
                        try await session.runImport(
                            staging: staged, request: request, watchdog: watchdog, progress: progress, progressRange: progressRange)
                    }
                }
                try await MigrationDataContainer.withCurrent(container) {
                    try await watchImport(
                        migrationExtension, name: name, at: staged, request: request, watchdog: watchdog,
                        progress: progress, progressRange: progressRange)
                }
            }
        } catch let error as ArchiveError where error.code == .stalled || error.code == .terminated {
            throw hostError(error, extensionName: name)
        }
    }

    /// Calls the importer while a child task follows its signs of life: each advance of its
    /// progress is a heartbeat and is mirrored into `progress`; each millisecond of CPU time its
    /// code uses is a heartbeat too, so that an importer that works without reporting is not
    /// taken for a stuck one.
    private static func watchImport<Extension: ResourcesImporting>(
        _ migrationExtension: Extension, name: String, at staged: URL, request: ResourcesImportRequest, watchdog: Watchdog,
        progress: Progress?, progressRange: (Int64, Int64)
    ) async throws {
        let executor = ExtensionExecutor(name: name)
        // Read once: an extension that stores its progress hands out the object it advances; one
        // that makes a new object per read cannot be followed, and lives by its CPU time.
        let reported = await withTaskExecutorPreference(executor) { migrationExtension.resourcesImportProgress }
        // The signs of life are read by the watchdog's own thread, which runs whatever holds the
        // cooperative pool; the task below only mirrors the progress for the caller.
        let seen = Mutex(ImportSignsOfLife(cpu: executor.cpuNanoseconds(), completed: reported.completedUnitCount))
        let probe = watchdog.addProbe(for: .extensionCode) {
            let (cpu, completed) = (executor.cpuNanoseconds(), reported.completedUnitCount)
            let (working, advanced) = seen.withLock { $0.see(cpu: cpu, completed: completed) }
            return working || advanced
        }
        defer { watchdog.removeProbe(probe) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                var last = reported.completedUnitCount
                while true {
                    // Ends with CancellationError when the import returns and the group cancels
                    // this observer; the group discards it.
                    try await Task.sleep(for: .milliseconds(50))
                    let now = reported.completedUnitCount
                    guard now != last else { continue }
                    last = now
                    if let progress {
                        let (low, high) = progressRange
                        let fraction = min(max(reported.fractionCompleted, 0), 1)
                        progress.completedUnitCount = low + Int64(Double(high - low) * fraction)
                    }
                }
            }
            watchdog.begin(.extensionCode)
            defer { watchdog.end(.extensionCode) }
            // Returning normally after a cancellation is judged by the supervisor: the import is
            // reported as terminated.
            try await withTaskExecutorPreference(executor) {
                try await migrationExtension.importResources(at: staged, request: request)
            }
            group.cancelAll()
        }
    }

    /// The name errors and metadata give an extension not named by the caller: its type's name,
    /// or an executable's file name.
    static func defaultName<Extension: AppMigrationExtension>(of migrationExtension: Extension) -> String {
        (migrationExtension as? ExtensionExecutable)?.name ?? String(describing: Extension.self)
    }

    /// The policy the watchdog supervises `migrationExtension` with. An extension process is
    /// killed and reaped by its session within the grace period: the watchdog's own last resort
    /// (answering without waiting for the operation) must come later, or the caller could hear
    /// back before the process is gone.
    static func supervisionPolicy(_ policy: WatchdogPolicy, for migrationExtension: some AppMigrationExtension) -> WatchdogPolicy {
        guard migrationExtension is ExtensionExecutable else { return policy }
        var extended = policy
        extended.gracePeriod += ExtensionSession.reapAllowance
        return extended
    }

    /// The CPU time an importer's code must use to count as alive, in nanoseconds: far above what
    /// a thread blocked for a whole stall timeout uses (nothing), far below what any real work does.
    static let importCPUSignOfLife: Int64 = 1_000_000

    /// What an extraction error means for the import: an unsafe member (a path or link leading
    /// outside the staging folder) is refused by name; anything else is an archive that cannot
    /// be read.
    static func extractionError(_ error: any Error, extensionName: String, path: String?) -> AppMigrationError {
        let what =
            (error as? ArchiveError)?.code == .unsafePath
            ? "the archive holds an unsafe member, so nothing was imported"
            : "cannot extract the archive"
        return AppMigrationError(
            .unreadableArchive, "\(what): \(error)", extensionName: extensionName, path: path,
            underlying: error)
    }

    /// Removes the container's data: every item under its root but the host's folder, then
    /// recreates the empty standard folders. App-group containers live elsewhere and stay.
    ///
    /// Nothing is followed: a link (one an archive brought, or an extension left) is removed, not
    /// what it points to, and the walk never leaves the container root (see
    /// ``UnfollowingRemoval``). The root itself may be a link: it is the caller's choice.
    ///
    /// `pinned` is what the container's root and the host's folder were when the import began,
    /// when its mark was checked; the caller has found them unchanged. Their mark is not looked
    /// at again: it is the extension's to remove (an importer that deleted `.amk/container` kept
    /// its half-written data, and the next import was refused as into an unknown folder), and
    /// `createStandardDirectories()` writes it back.
    static func clearContainer(_ container: MigrationDataContainer, pinned: PinnedContainer) {
        guard container.isConfigured else { return }
        // Best effort: one undeletable file must not keep the failure from being recorded.
        try? UnfollowingRemoval.removeChildren(
            of: container.containerRootDirectory.path(percentEncoded: false),
            followingFinalLink: true
        ) { $0 != MigrationDataContainer.hostDirectoryName }
        try? container.createStandardDirectories()
    }

    /// Removes an import's staging folder from the host's folder, links and all, without
    /// following any. Best effort: the next import removes what is left
    /// (``removeStaleStaging(in:)``).
    static func removeStaging(_ staging: URL, of container: MigrationDataContainer) {
        let name = staging.lastPathComponent
        try? UnfollowingRemoval.removeChildren(
            of: container.hostDirectory.path(percentEncoded: false),
            followingFinalLink: false
        ) { $0 == name }
    }

    // MARK: - The lock, seen from outside

    /// Whether a migration (export or import) holds `container`'s lock now. An app checks this at
    /// launch and waits instead of touching data that is being replaced.
    public static func isMigrationInProgress(container: MigrationDataContainer) -> Bool {
        ContainerLock.isHeld(on: container)
    }

    /// Free bytes for an unprivileged user on the file system holding `path`.
    @Sendable static func statvfsFreeBytes(_ path: String) throws -> UInt64 {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else {
            throw AppMigrationError(.itemNotFound, "cannot measure free space: \(String(cString: strerror(errno)))", path: path)
        }
        return UInt64(info.f_bavail) * UInt64(info.f_frsize)
    }
}
