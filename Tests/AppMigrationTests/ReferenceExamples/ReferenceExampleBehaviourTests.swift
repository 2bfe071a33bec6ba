import AppMigration
import Foundation
import IndexedArchive
import Testing

/// The reference examples, exercised through the host: each test checks what the example promises.
@Suite struct ReferenceExampleBehaviourTests {
    /// Exports with `exporter` from a seeded container and returns the archive.
    func export<E: ResourcesExportingWithOptions>(
        _ exporter: E, in scratch: Scratch, destination: MigrationPlatform = .android,
        seed: (MigrationDataContainer) throws -> Void = SampleData.seed
    ) async throws -> (URL, DeviceToDeviceExportProperties) {
        let source = try scratch.container("source-\(UUID().uuidString)")
        try seed(source)
        let archive = scratch.url("export-\(UUID().uuidString).tar.xz")
        let properties = try await quickSystem.exportResources(
            of: exporter, from: source, request: MigrationRequestWithOptions(destinationPlatform: destination), to: archive)
        return (archive, properties)
    }

    // MARK: - Combined export and import

    @Test func combinedExtensionRoundTripsProfileSettingsAndMedia() async throws {
        try await Scratch.with { scratch in
            let (archive, properties) = try await export(AppDataMigration(), in: scratch)
            #expect(properties.version == "2.0")
            let names = try await memberNames(of: archive)
            #expect(names.contains("user/profile.json"))
            #expect(names.contains("config/settings.json"))
            #expect(names.contains("media/clips/one.mp4"))
            let destination = try scratch.container("destination")
            let progress = Progress(totalUnitCount: 100)
            try await quickSystem.importResources(from: archive, into: destination, using: AppDataMigration(), progress: progress)
            #expect(try read("profile.json", in: destination.documentsDirectory) == SampleData.profile)
            #expect(try read("settings.json", in: destination.applicationSupportDirectory) == SampleData.settings)
            #expect(exists("media/clips/one.mp4", in: destination.documentsDirectory))
            #expect(progress.completedUnitCount == 100)
            let status = MigrationDataContainer.withCurrent(destination) { MigrationStatus.importStatus }
            guard case .success = status else {
                Issue.record("expected success, got \(String(describing: status))")
                return
            }
        }
    }

    @Test func combinedExtensionEstimatesTheBytesItExports() async throws {
        try await Scratch.with { scratch in
            let (archive, properties) = try await export(AppDataMigration(), in: scratch)
            // The estimate walks Documents and Application Support, which hold every seeded file.
            // It sums `fileSize` over folders too, which Foundation on Linux reports (st_size), so
            // it overestimates by a block per folder: as the reference's guidelines want, not under.
            let seeded = try scratch.container("measure")
            try SampleData.seed(seeded)
            let root = seeded.containerRootDirectory
            let bytes = try files(under: root).reduce(0) { total, path in
                total
                    + (try FileManager.default.attributesOfItem(atPath: root.appending(path: path).path(percentEncoded: false))[.size]
                        as? Int ?? 0)
            }
            #expect(properties.sizeEstimate >= bytes)
            #expect(properties.sizeEstimate <= bytes + 3 * 4096, "3 folders under Documents")
            let metadata = try await ArchiveReader(path: archive.path(percentEncoded: false)).metadata()
            #expect(metadata["sizeEstimate"] == String(properties.sizeEstimate))
        }
    }

    // MARK: - Versioned import by sourceVersion

    @Test func versionedExportCarriesItsVersionToTheImporter() async throws {
        try await Scratch.with { scratch in
            let (archive, properties) = try await export(VersionedMigration(), in: scratch) { container in
                try write(#"{"a":1}"#, to: "data/a.json", in: container.documentsDirectory)
                try write("pixels", to: "assets/a.png", in: container.documentsDirectory)
            }
            #expect(properties.version == "3.0")
            let metadata = try await ArchiveReader(path: archive.path(percentEncoded: false)).metadata()
            #expect(metadata["resourcesVersion"] == "3.0")
            #expect(try await memberNames(of: archive).sorted() == ["assets", "assets/a.png", "data", "data/a.json", "manifest.json"])
            let destination = try scratch.container("destination")
            try await quickSystem.importResources(from: archive, into: destination, using: VersionedMigration())
            // importV3 copies the contents as they are, leaving the manifest out.
            #expect(files(under: destination.documentsDirectory) == ["assets/a.png", "data/a.json"])
        }
    }

    /// An earlier release's exporter: flat files, version 2.0.
    struct V2Exporter: ResourcesExporting {
        var resourcesSizeEstimate: Int { 0 }
        var resourcesVersion: String { "2.0" }
        var resourcesCompressible: Bool { true }
        func exportResources(to archiver: sending ResourcesArchiver, request: MigrationRequest) async throws {
            try await archiver.appendItem(at: appContainer.documentsDirectory.appending(path: "notes.json"))
            try await archiver.appendItem(at: appContainer.documentsDirectory.appending(path: "photo.jpg"))
        }
    }

    /// The first release's exporter: one `data.archive`, version 1.0.
    struct V1Exporter: ResourcesExporting {
        var version = "1.0"
        var resourcesSizeEstimate: Int { 0 }
        var resourcesVersion: String { version }
        var resourcesCompressible: Bool { false }
        func exportResources(to archiver: sending ResourcesArchiver, request: MigrationRequest) async throws {
            try await archiver.appendItem(at: appContainer.documentsDirectory.appending(path: "data.archive"))
        }
    }

    @Test func versionTwoArchiveIsRemappedIntoTheCurrentLayout() async throws {
        try await Scratch.with { scratch in
            let (archive, _) = try await export(V2Exporter(), in: scratch) { container in
                try write(#"{"n":1}"#, to: "notes.json", in: container.documentsDirectory)
                try write("jpeg", to: "photo.jpg", in: container.documentsDirectory)
            }
            let destination = try scratch.container("destination")
            try await quickSystem.importResources(from: archive, into: destination, using: VersionedMigration())
            #expect(files(under: destination.documentsDirectory) == ["assets/photo.jpg", "data/notes.json"])
        }
    }

    @Test func versionOneArchiveIsUnpacked() async throws {
        try await Scratch.with { scratch in
            let (archive, properties) = try await export(V1Exporter(), in: scratch) { container in
                try write(#"{"old.txt":"from v1"}"#, to: "data.archive", in: container.documentsDirectory)
            }
            #expect(properties.compressedBytes == nil, "V1Exporter declares its data incompressible")
            let destination = try scratch.container("destination")
            try await quickSystem.importResources(from: archive, into: destination, using: VersionedMigration())
            #expect(try read("legacy/old.txt", in: destination.documentsDirectory) == "from v1")
        }
    }

    @Test func unknownVersionFailsTheImportAndIsRecorded() async throws {
        try await Scratch.with { scratch in
            let (archive, _) = try await export(V1Exporter(version: "9.9"), in: scratch) { container in
                try write("{}", to: "data.archive", in: container.documentsDirectory)
            }
            let destination = try scratch.container("destination")
            try write("stale", to: "old.txt", in: destination.documentsDirectory)
            await #expect {
                try await quickSystem.importResources(from: archive, into: destination, using: VersionedMigration())
            } throws: { error in
                if case MigrationError.unsupportedVersion("9.9") = error { return true }
                return false
            }
            #expect(files(under: destination.documentsDirectory).isEmpty, "the container is cleared")
            let status = MigrationDataContainer.withCurrent(destination) { MigrationStatus.importStatus }
            guard case .failure(let error) = status else {
                Issue.record("expected a recorded failure, got \(String(describing: status))")
                return
            }
            #expect("\(error)".contains("unsupportedVersion(\"9.9\")"))
        }
    }

    // MARK: - Directory enumeration, platforms, options

    @Test func directoryEnumerationExportsEachFileUnderDocuments() async throws {
        try await Scratch.with { scratch in
            let (archive, _) = try await export(DirectoryEnumerationExport(), in: scratch) { container in
                try SampleData.seed(container)
                try write("hidden", to: ".secret", in: container.documentsDirectory)
            }
            let names = try await memberNames(of: archive).sorted()
            #expect(names.contains("documents/profile.json"))
            #expect(names.contains("documents/media/clips/one.mp4"))
            #expect(names.contains("documents/photos/a.heic"))
            #expect(!names.contains { $0.contains(".secret") }, "hidden files are skipped")
            #expect(!names.contains("documents/media"), "only regular files are appended: \(names)")
        }
    }

    @Test(arguments: [(MigrationPlatform.android, "database/app.db"), (MigrationPlatform("windows"), "database/app.sqlite")])
    func platformSpecificExportNamesTheDatabaseForTheDestination(platform: MigrationPlatform, database: String) async throws {
        try await Scratch.with { scratch in
            let (archive, _) = try await export(PlatformSpecificExport(), in: scratch, destination: platform)
            #expect(try await memberNames(of: archive).sorted() == ["common/user_profile.json", database].sorted())
        }
    }

    @Test func customPlatformComparesByName() {
        // verbatim from "Custom Platforms", with a request to compare against
        let request = MigrationRequest(destinationPlatform: MigrationPlatform("windows"))
        var windowsSpecific = false
        let customPlatform = MigrationPlatform("windows")

        // In export:
        if request.destinationPlatform == customPlatform {
            // Windows-specific export
            windowsSpecific = true
        }
        #expect(windowsSpecific)
        #expect(customPlatform != .android)
    }

    @Test func selectiveAndSimpleExports() async throws {
        try await Scratch.with { scratch in
            let (selective, _) = try await export(MyMigration(), in: scratch)
            #expect(try await memberNames(of: selective) == ["core_data.json"])
            let (simple, _) = try await export(SimpleMigration(), in: scratch)
            let names = try await memberNames(of: simple)
            #expect(names.first == "Documents")
            #expect(names.contains("Documents/media/cover.jpg"))
        }
    }

    @Test func accurateSizeEstimateSkipsCachesAndAddsSettings() async throws {
        try await Scratch.with { scratch in
            let (archive, properties) = try await export(AccurateSizeMigration(), in: scratch) { container in
                try write(String(repeating: "d", count: 1000), to: "keep.txt", in: container.documentsDirectory)
                try write(String(repeating: "c", count: 5000), to: "Caches/skip.bin", in: container.documentsDirectory)
                try write(String(repeating: "s", count: 30), to: "settings.json", in: container.applicationSupportDirectory)
            }
            #expect(properties.sizeEstimate == 1030)
            #expect(try await memberNames(of: archive).isEmpty, "its export appends nothing")
        }
    }

    // MARK: - Defensive import

    /// Writes what a DefensiveMigration import expects: a manifest and files, `account.json` as given.
    func defensiveArchive(account: String, thumbnails: String, in scratch: Scratch) async throws -> URL {
        struct Exporter: ResourcesExporting {
            var resourcesSizeEstimate: Int { 0 }
            var resourcesVersion: String { "1.0" }
            var resourcesCompressible: Bool { true }
            func exportResources(to archiver: sending ResourcesArchiver, request: MigrationRequest) async throws {
                for name in ["manifest.json", "account.json", "thumbnails.json", "notes.txt"] {
                    try await archiver.appendItem(at: appContainer.documentsDirectory.appending(path: name))
                }
            }
        }
        return try await export(Exporter(), in: scratch) { container in
            let docs = container.documentsDirectory
            try write(#"{"version":"1.0","exportDate":"2026-01-01T00:00:00Z","fileCount":3}"#, to: "manifest.json", in: docs)
            try write(account, to: "account.json", in: docs)
            try write(thumbnails, to: "thumbnails.json", in: docs)
            try write("plain", to: "notes.txt", in: docs)
        }.0
    }

    @Test func defensiveImportLogsNonCriticalFailuresAndClearsOnlyMigratedGroupData() async throws {
        try await Scratch.with { scratch in
            let archive = try await defensiveArchive(account: #"{"id":7}"#, thumbnails: "not json {", in: scratch)
            let destination = try scratch.container("destination")
            let group = try #require(destination.appGroupDirectories["group.com.example.myapp"])
            try write("stale", to: "migrated_data/old", in: group)
            try write("keep", to: "other_state", in: group)
            try await quickSystem.importResources(from: archive, into: destination, using: DefensiveMigration())
            #expect(files(under: destination.documentsDirectory) == ["account.json", "notes.txt"])
            #expect(ImportWarnings.shared.contains("thumbnails.json"))
            #expect(!exists("migrated_data", in: group), "migration data in the group is cleared first")
            #expect(exists("other_state", in: group), "other shared state is preserved")
        }
    }

    @Test func defensiveImportFailsOnACriticalFileAndTheHostClearsTheContainer() async throws {
        try await Scratch.with { scratch in
            let archive = try await defensiveArchive(account: "corrupt {", thumbnails: "[]", in: scratch)
            let destination = try scratch.container("destination")
            try write("pre-existing", to: "old.txt", in: destination.documentsDirectory)
            let group = try #require(destination.appGroupDirectories["group.com.example.myapp"])
            try write("keep", to: "other_state", in: group)
            await #expect(throws: (any Error).self) {
                try await quickSystem.importResources(from: archive, into: destination, using: DefensiveMigration())
            }
            #expect(
                files(under: destination.containerRootDirectory).allSatisfy { $0.hasPrefix(".amk/") },
                "only the host's folder is left: \(files(under: destination.containerRootDirectory))")
            #expect(exists("other_state", in: group))
            let status = MigrationDataContainer.withCurrent(destination) { MigrationStatus.importStatus }
            guard case .failure = status else {
                Issue.record("expected a recorded failure, got \(String(describing: status))")
                return
            }
        }
    }

    // MARK: - Skill variants

    @Test func appGroupClearingImportRemovesSharedDataThenImports() async throws {
        try await Scratch.with { scratch in
            let (archive, _) = try await export(MyMigrationExtension(), in: scratch)
            let destination = try scratch.container("destination")
            let group = try #require(destination.appGroupDirectories["group.com.example.myapp"])
            try write("old", to: "shared_data", in: group)
            try await quickSystem.importResources(from: archive, into: destination, using: AppGroupClearingImport())
            #expect(!exists("shared_data", in: group))
            #expect(exists("user_data.json", in: destination.documentsDirectory))
            #expect(exists("preferences/settings.plist", in: destination.documentsDirectory))
        }
    }

    @Test func progressReportingImportCompletesTheHostProgress() async throws {
        try await Scratch.with { scratch in
            let (archive, _) = try await export(MyMigration(), in: scratch)
            let destination = try scratch.container("destination")
            let progress = Progress(totalUnitCount: 1000)
            try await quickSystem.importResources(
                from: archive, into: destination, using: ProgressReportingImport(),
                progress: progress)
            #expect(progress.completedUnitCount == 1000)
            #expect(exists("core_data.json", in: destination.documentsDirectory))
        }
    }

    // MARK: - Migration status, as the app's launch code reads it

    @Test func launchCodeShowsTheResultOnceAndClearsIt() async throws {
        try await Scratch.with { scratch in
            let container = try scratch.container("app")
            try await MigrationDataContainer.withCurrent(container) {
                #expect(MigrationStatus.importStatus == nil, "no migration happened")
                try await AppMigrationTester.withExtension(
                    MyMigrationExtension(), exportContainer: container, importContainer: container,
                    workDirectory: scratch.url("work")
                ) {
                    let tester = try await AppMigrationTester(platform: .android)
                    try await tester.importController.registerImportCompletion(
                        with: .failure(MigrationError.importFailed("disk on fire")))
                }
                // verbatim from "Migration Status in SwiftUI" (checkMigration), assigning to a local
                var migrationResult: MigrationResult?
                guard let status = MigrationStatus.importStatus else {
                    Issue.record("the status was not recorded")
                    return
                }

                switch status {
                case .success:
                    migrationResult = MigrationResult(succeeded: true, errorMessage: nil)
                case .failure(let error):
                    migrationResult = MigrationResult(
                        succeeded: false,
                        errorMessage: error.localizedDescription
                    )
                }

                MigrationStatus.clearImportStatus()
                #expect(migrationResult?.succeeded == false)
                #expect(migrationResult?.errorMessage?.contains("disk on fire") == true)
                #expect(MigrationStatus.importStatus == nil, "shown once")
            }
        }
    }
}
