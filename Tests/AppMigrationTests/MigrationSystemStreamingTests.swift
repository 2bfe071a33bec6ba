import Foundation
import IndexedArchive
import TestSupport
import Testing

@testable import AppMigration

/// Tests `MigrationSystem+Streaming.swift`: export and import joined by a pipe.
// Serialized: each test compresses megabytes, and the host's watchdog tests measure time.
@Suite(.serialized) struct MigrationSystemStreamingTests {
    /// An `export` container holding release 1's `profile.json`, an `import` container, and a
    /// ``ProfileMigration`` that imports into `store` in the latter.
    static func v1ProfileMigration(
        in scratch: Scratch
    ) throws -> (source: MigrationDataContainer, destination: MigrationDataContainer, store: URL, migration: ProfileMigration) {
        let source = try scratch.container("export")
        let destination = try scratch.container("import")
        try write(v1Profile, to: "profile.json", in: source.documentsDirectory)
        let store = destination.applicationSupportDirectory.appending(path: "store")
        return (source, destination, store, ProfileMigration(store: store))
    }

    @Test func aMigrationThroughAPipeArrivesByteIdentical() async throws {
        try await Scratch.with { scratch in
            let (source, destination) = try scratch.seededExportAndImport()
            let migration = TreeCopyMigration(version: "7")
            let (exported, imported) = try await quickSystem.migrate(
                exporting: migration, from: source, request: MigrationRequest(destinationPlatform: .current),
                importing: migration, into: destination)
            #expect(exported.version == "7")
            #expect(exported.uncompressedBytes > 1_500_000)
            #expect(imported.sourceVersion == "7")
            #expect(imported.sourceAppIdentifier.bundleIdentifier == source.bundleIdentifier)
            let sent = try snapshot(source.containerRootDirectory)
            #expect(sent.count >= 8)
            #expect(try snapshot(destination.containerRootDirectory) == sent)
            expectSuccessStatus(in: destination)
            #expect(try stagingFolders(in: destination).isEmpty)
        }
    }

    /// The exporter holds back its second folder until the receiving side has started writing the
    /// first into its staging folder: this finishes only if import runs while export does.
    ///
    /// The first folder is 8 MiB: the engine writes a compressed block only once more chunks than
    /// its in-flight limit (2 per worker) are queued or the archive ends, so a smaller first item
    /// would reach the pipe only at the end.
    @Test func theImportStartsBeforeTheExportEnds() async throws {
        try await Scratch.with { scratch in
            let (source, destination) = try scratch.seededExportAndImport(bigBytes: 8 << 20)
            let stagingSeen = RanFlag()
            var migration = TreeCopyMigration()
            migration.afterFirstAppend = {
                let deadline = ContinuousClock.now + .seconds(20)
                while ContinuousClock.now < deadline {
                    let staged = (try? stagingFolders(in: destination)) ?? []
                    // big.bin itself appears only once complete (files are renamed into place when
                    // their content checked out); while it arrives it is a temporary file there.
                    let media = staged.map {
                        destination.containerRootDirectory.appending(path: ".amk/\($0)/Documents/media").path(percentEncoded: false)
                    }
                    if media.contains(where: { ((try? FileManager.default.contentsOfDirectory(atPath: $0)) ?? []).isEmpty == false }) {
                        stagingSeen.set()
                        return
                    }
                    try await Task.sleep(for: .milliseconds(10))
                }
            }
            try await quickSystem.migrate(
                exporting: migration, from: source,
                request: MigrationRequest(destinationPlatform: .current),
                importing: migration, into: destination)
            #expect(stagingSeen.value, "nothing was staged while the export was still running")
            #expect(try snapshot(destination.containerRootDirectory) == snapshot(source.containerRootDirectory))
        }
    }

    /// Release 1 exported a v1 profile; this app stores v3. The archive's `sourceVersion` picks
    /// the schema steps to run on import.
    @Test func aV1ArchiveImportsIntoAV3App() async throws {
        try await Scratch.with { scratch in
            let (source, destination, store, migration) = try Self.v1ProfileMigration(in: scratch)
            try await quickSystem.migrate(
                exporting: migration, from: source,
                request: MigrationRequest(destinationPlatform: .current),
                importing: migration, into: destination)
            let record = try #require(try VersionedStore(directory: store).read("user_profile"))
            #expect(record.version == 3)
            let profile = try JSONDecoder().decode(UserProfile.self, from: record.data)
            #expect(profile.userId == "usr_123")
            #expect(profile.preferences.theme == "system")
            #expect(!profile.notificationSettings.marketingOptIn)
        }
    }

    /// The same through the host's archive-file path: export to a file, import from it.
    @Test func aV1ArchiveFileImportsIntoAV3App() async throws {
        try await Scratch.with { scratch in
            let (source, destination, store, migration) = try Self.v1ProfileMigration(in: scratch)
            let archive = scratch.url("v1.tar.xz")
            try await quickSystem.exportResources(
                of: migration, from: source,
                request: MigrationRequest(destinationPlatform: .current), to: archive)
            try await quickSystem.importResources(from: archive, into: destination, using: migration)
            let record = try #require(try VersionedStore(directory: store).read("user_profile"))
            #expect(record.version == 3)
            #expect(try JSONDecoder().decode(UserProfile.self, from: record.data).notificationSettings.pushEnabled)
        }
    }

    /// An archive cut at several places, fed through a pipe: the import fails cleanly.
    @Test(arguments: [100, 5_000, 700_000, -40])
    func aCutStreamFailsTheImportAndLeavesNothing(cut: Int) async throws {
        try await Scratch.with { scratch in
            let (source, destination) = try scratch.seededExportAndImport(bigBytes: 1 << 20)
            try write("keep me", to: "old.txt", in: destination.documentsDirectory)
            let before = try snapshot(destination.containerRootDirectory)
            let archive = scratch.url("whole.tar.xz")
            try await quickSystem.exportResources(
                of: TreeCopyMigration(), from: source,
                request: MigrationRequest(destinationPlatform: .current), to: archive)
            let bytes = try Data(contentsOf: archive)
            let length = cut >= 0 ? cut : bytes.count + cut
            #expect(length < bytes.count)
            let migration = TreeCopyMigration()
            let error = try #require(
                await #expect(throws: AppMigrationError.self, "a stream cut at \(length) of \(bytes.count) bytes was imported") {
                    try await feed(Array(bytes.prefix(length))) { fd in
                        try await quickSystem.importResources(fromDescriptor: fd, into: destination, using: migration)
                    }
                })
            #expect(error.code == .unreadableArchive, "\(error)")
            #expect(!migration.importCalled.value)
            try expectLeftAsItWas(destination, before: before)
        }
    }

    @Test func aFailingExporterFailsBothSidesWithItsOwnError() async throws {
        try await Scratch.with { scratch in
            let (source, destination) = try scratch.seededExportAndImport()
            var migration = TreeCopyMigration()
            migration.afterFirstAppend = { throw TreeCopyMigration.Failure(description: "exporter gave up") }
            let before = try snapshot(destination.containerRootDirectory)
            let error = try #require(
                await #expect(throws: TreeCopyMigration.Failure.self, "the migration succeeded") {
                    try await quickSystem.migrate(
                        exporting: migration, from: source,
                        request: MigrationRequest(destinationPlatform: .current),
                        importing: migration, into: destination)
                })
            #expect(error.description == "exporter gave up")
            #expect(!migration.importCalled.value)
            #expect(try snapshot(destination.containerRootDirectory) == before)
            expectFailureStatus(in: destination)
        }
    }

    @Test func aFailingImporterClearsTheContainer() async throws {
        try await Scratch.with { scratch in
            let (source, destination) = try scratch.seededExportAndImport(bigBytes: 4096)
            try write("old", to: "old.txt", in: destination.documentsDirectory)
            var migration = TreeCopyMigration()
            migration.importFails = true
            await #expect(throws: TreeCopyMigration.Failure.self) {
                try await quickSystem.migrate(
                    exporting: migration, from: source,
                    request: MigrationRequest(destinationPlatform: .current),
                    importing: migration, into: destination)
            }
            #expect(migration.importCalled.value)
            // Cleared: the standard folders, empty.
            #expect(try snapshot(destination.containerRootDirectory).filter { $0.value != Data("<dir>".utf8) }.isEmpty)
            guard case .failure(let error)? = importStatus(of: destination) else {
                Issue.record("no failure status")
                return
            }
            #expect("\(error)".contains("importer failed"))
        }
    }

    /// Imports from a stream and from a file are one flow: both remove the staging folder an
    /// import killed before its cleanup left (the file import once did not).
    @Test(arguments: ["stream", "file"])
    func aStaleStagingFolderIsRemovedByTheNextImport(from source: String) async throws {
        try await Scratch.with { scratch in
            let (exported, destination) = try scratch.seededExportAndImport(bigBytes: 4096)
            try write("half", to: ".amk/staging-dead/Documents/x", in: destination.containerRootDirectory)
            let migration = TreeCopyMigration()
            let request = MigrationRequest(destinationPlatform: .current)
            if source == "stream" {
                try await quickSystem.migrate(
                    exporting: migration, from: exported, request: request, importing: migration, into: destination)
            } else {
                let archive = scratch.url("a.tar.xz")
                try await quickSystem.exportResources(of: migration, from: exported, request: request, to: archive)
                try await quickSystem.importResources(from: archive, into: destination, using: migration)
            }
            #expect(try stagingFolders(in: destination).isEmpty)
        }
    }
}

// MARK: - Links from the archive (issue #10, finding 2)

extension MigrationSystemStreamingTests {
    /// The archive with a top-level link out of the container, arriving on a pipe: the streamed
    /// extraction refuses the link, so the merging importer is never called.
    @Test(arguments: EscapingLink.all)
    func aStreamedTopLevelLinkLeadingOutsideFailsTheImport(link: EscapingLink) async throws {
        try await Scratch.with { scratch in
            let outside = try OutsideFolder(in: scratch)
            let outsideBefore = try outside.contents()
            let (destination, before) = try scratch.importContainerWithKeptFile()
            let error = await #expect(throws: AppMigrationError.self) {
                try await feed(try link.archive(to: outside)) { fd in
                    try await quickSystem.importResources(fromDescriptor: fd, into: destination, using: MergingMigration())
                }
            }
            #expect(error?.code == .unreadableArchive)
            try expectRefused(
                link, message: error.map { "\($0)" }, destination: destination, containerBefore: before,
                outside: outside, outsideBefore: outsideBefore)
        }
    }

    /// A source container whose `Documents` or `Library` is a link out of it exports the link as a
    /// link; `migrate` then fails on the importing side and moves nothing from outside.
    @Test(arguments: EscapingLink.all)
    func aMigrationOfALinkedFolderFailsAndTouchesNothing(link: EscapingLink) async throws {
        try await Scratch.with { scratch in
            let outside = try OutsideFolder(in: scratch)
            let outsideBefore = try outside.contents()
            let source = try link.plantedSource(in: scratch, to: outside)
            let (destination, before) = try scratch.importContainerWithKeptFile()
            let error = await #expect(throws: AppMigrationError.self) {
                try await quickSystem.migrate(
                    exporting: MergingMigration(), from: source,
                    request: MigrationRequest(destinationPlatform: .current),
                    importing: MergingMigration(), into: destination)
            }
            #expect(error?.code == .unreadableArchive)
            try expectRefused(
                link, message: error.map { "\($0)" }, destination: destination, containerBefore: before,
                outside: outside, outsideBefore: outsideBefore)
        }
    }

    /// A streamed member whose header claims nearly 2^63 bytes, cut short: the import fails with
    /// the host's typed error naming the member and a recorded failure; nothing traps.
    @Test func aStreamedMemberClaimingNearly2To63BytesFailsCleanly() async throws {
        try await Scratch.with { scratch in
            let (destination, before) = try scratch.importContainerWithKeptFile()
            let migration = TreeCopyMigration()
            let error = await #expect(throws: AppMigrationError.self) {
                try await feed(try HostileArchive.streamClaimingHugeMember()) { fd in
                    try await quickSystem.importResources(fromDescriptor: fd, into: destination, using: migration)
                }
            }
            // Its size alone passes what the volume can take: refused before a byte is written
            // (it was cut short first, and reported as a broken stream).
            if case .insufficientSpace = error?.code {
            } else {
                Issue.record("expected insufficientSpace, got \(String(describing: error))")
            }
            #expect(error?.message.contains("Documents/huge.bin") == true, "\(String(describing: error))")
            #expect(!migration.importCalled.value)
            try expectLeftAsItWas(destination, before: before)
        }
    }

    /// A staging folder left by a killed receiver that holds links out of the container, or is
    /// itself such a link: the next import removes the links, not what they point to.
    @Test func staleStagingIsRemovedWithoutFollowingItsLinks() async throws {
        try await Scratch.with { scratch in
            let outside = try OutsideFolder(in: scratch)
            let outsideBefore = try outside.contents()
            let (source, destination) = try scratch.seededExportAndImport(bigBytes: 4096)
            let host = destination.containerRootDirectory.appending(path: ".amk").path(percentEncoded: false)
            try FileManager.default.createDirectory(atPath: host + "/staging-dead/Documents", withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(atPath: host + "/staging-dead/Documents/escape", withDestinationPath: outside.path)
            try FileManager.default.createSymbolicLink(atPath: host + "/staging-dead/Library", withDestinationPath: outside.path)
            try FileManager.default.createSymbolicLink(atPath: host + "/staging-link", withDestinationPath: outside.path)
            let migration = TreeCopyMigration()
            try await quickSystem.migrate(
                exporting: migration, from: source,
                request: MigrationRequest(destinationPlatform: .current),
                importing: migration, into: destination)
            #expect(try stagingFolders(in: destination).isEmpty)
            #expect(try outside.contents() == outsideBefore)
        }
    }
}

/// Release 1 exported `profile.json` at schema version 1; this release stores version 3.
struct ProfileMigration: ResourcesExporting, ResourcesImporting {
    let resourcesImportProgress = Progress(totalUnitCount: 100)
    var store = URL(filePath: "/dev/null/no-store")
    var resourcesVersion: String { "1" }
    var resourcesCompressible: Bool { true }
    var resourcesSizeEstimate: Int { get async { 1024 } }
    func exportResources(to archiver: sending ResourcesArchiver, request: MigrationRequest) async throws {
        try await archiver.appendItem(
            at: appContainer.documentsDirectory.appending(path: "profile.json"),
            pathInArchive: "profile.json")
    }
    func importResources(at url: URL, request: ResourcesImportRequest) async throws {
        let data = try Data(contentsOf: url.appending(path: "profile.json"))
        let current = try SchemaMigrator(userProfileSteps).migrate(
            data, model: "user_profile", fromSourceVersion: request.sourceVersion, to: UserProfile.schemaVersion)
        _ = try JSONDecoder().decode(UserProfile.self, from: current)
        try VersionedStore(directory: store).write(current, version: UserProfile.schemaVersion, for: "user_profile")
    }
}
