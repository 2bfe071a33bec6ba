// Ported from reference/appmigrationkit-patterns.txt (AppMigrationKit Patterns). The code between
// the "verbatim" markers is the reference's, unchanged except for the import line; the two
// free-standing `exportResources` fragments are wrapped in a struct (marked "wrapper") because a
// protocol method needs a type. Helpers the reference calls but does not define are in
// AppMigrationKitPatternsSupport.swift.

// verbatim: Combined Export and Import Extension
import AppMigration
import Foundation

struct AppDataMigration: ResourcesExportingWithOptions, ResourcesImporting {
    typealias OptionsType = MigrationDefaultSupportedOptions

    // MARK: - Export Properties

    var resourcesSizeEstimate: Int {
        estimateTotalExportSize()
    }

    var resourcesVersion: String {
        "2.0"
    }

    var resourcesCompressible: Bool {
        true
    }

    // MARK: - Export

    func exportResources(
        to archiver: sending ResourcesArchiver,
        request: MigrationRequestWithOptions<MigrationDefaultSupportedOptions>
    ) async throws {
        let docs = appContainer.documentsDirectory
        let appSupport = appContainer.applicationSupportDirectory

        // Export user data
        try await archiver.appendItem(
            at: docs.appending(path: "profile.json"),
            pathInArchive: "user/profile.json"
        )

        // Export preferences
        try await archiver.appendItem(
            at: appSupport.appending(path: "settings.json"),
            pathInArchive: "config/settings.json"
        )

        // Export media directory
        let mediaDir = docs.appending(path: "media")
        if FileManager.default.fileExists(atPath: mediaDir.path()) {
            try await archiver.appendItem(
                at: mediaDir,
                pathInArchive: "media"
            )
        }
    }

    // MARK: - Import

    var resourcesImportProgress: Progress {
        Progress(totalUnitCount: 100)
    }

    func importResources(
        at importedDataURL: URL,
        request: ResourcesImportRequest
    ) async throws {
        let progress = resourcesImportProgress
        let docs = appContainer.documentsDirectory
        let appSupport = appContainer.applicationSupportDirectory
        let fm = FileManager.default

        // Phase 1: Import user data (40%)
        let profileSource = importedDataURL.appending(path: "user/profile.json")
        if fm.fileExists(atPath: profileSource.path()) {
            try fm.copyItem(
                at: profileSource,
                to: docs.appending(path: "profile.json")
            )
        }
        progress.completedUnitCount = 40

        // Phase 2: Import settings (20%)
        let settingsSource = importedDataURL.appending(path: "config/settings.json")
        if fm.fileExists(atPath: settingsSource.path()) {
            try fm.copyItem(
                at: settingsSource,
                to: appSupport.appending(path: "settings.json")
            )
        }
        progress.completedUnitCount = 60

        // Phase 3: Import media (40%)
        let mediaSource = importedDataURL.appending(path: "media")
        if fm.fileExists(atPath: mediaSource.path()) {
            try fm.copyItem(
                at: mediaSource,
                to: docs.appending(path: "media")
            )
        }
        progress.completedUnitCount = 100
    }

    // MARK: - Helpers

    private func estimateTotalExportSize() -> Int {
        let docs = appContainer.documentsDirectory
        let appSupport = appContainer.applicationSupportDirectory
        return directorySize(docs) + directorySize(appSupport)
    }

    private func directorySize(_ url: URL) -> Int {
        let fm = FileManager.default
        guard
            let enumerator = fm.enumerator(
                at: url,
                includingPropertiesForKeys: [.fileSizeKey],
                options: [.skipsHiddenFiles]
            )
        else { return 0 }

        var total = 0
        for case let fileURL as URL in enumerator {
            let size = (try? fileURL.resourceValues(forKeys: [.fileSizeKey]))?.fileSize ?? 0
            total += size
        }
        return total
    }
}

// verbatim: Versioned Data Migration
struct VersionedMigration: ResourcesExportingWithOptions, ResourcesImporting {
    // added: a requirement on iOS as here; the reference omits it
    let resourcesImportProgress = Progress(totalUnitCount: 100)
    typealias OptionsType = MigrationDefaultSupportedOptions

    // Current export format version
    var resourcesVersion: String { "3.0" }
    var resourcesSizeEstimate: Int { estimateSize() }
    var resourcesCompressible: Bool { true }

    func exportResources(
        to archiver: sending ResourcesArchiver,
        request: MigrationRequestWithOptions<MigrationDefaultSupportedOptions>
    ) async throws {
        // Always export in the latest format
        let manifest = ExportManifest(
            version: resourcesVersion,
            exportDate: Date(),
            fileCount: countExportableFiles()
        )
        let manifestURL = writeManifest(manifest)
        try await archiver.appendItem(at: manifestURL, pathInArchive: "manifest.json")

        // Export data files
        try await exportCurrentFormatFiles(to: archiver)
    }

    func importResources(
        at importedDataURL: URL,
        request: ResourcesImportRequest
    ) async throws {
        let sourceVersion = request.sourceVersion

        switch sourceVersion {
        case "3.0":
            try await importV3(from: importedDataURL)
        case "2.0":
            try await importV2(from: importedDataURL)
        case "1.0":
            try await importV1(from: importedDataURL)
        default:
            throw MigrationError.unsupportedVersion(sourceVersion)
        }
    }

    // MARK: - Version-specific import

    private func importV3(from url: URL) async throws {
        // Direct import -- current format
        let docs = appContainer.documentsDirectory
        try copyContents(from: url, to: docs)
    }

    private func importV2(from url: URL) async throws {
        // V2 used a flat file structure; remap to V3 directories
        let docs = appContainer.documentsDirectory
        let fm = FileManager.default

        let files = try fm.contentsOfDirectory(at: url, includingPropertiesForKeys: nil)
        for file in files {
            let name = file.lastPathComponent
            let destination: URL
            if name.hasSuffix(".json") {
                destination = docs.appending(path: "data/\(name)")
            } else {
                destination = docs.appending(path: "assets/\(name)")
            }
            try fm.createDirectory(
                at: destination.deletingLastPathComponent(),
                withIntermediateDirectories: true
            )
            try fm.copyItem(at: file, to: destination)
        }
    }

    private func importV1(from url: URL) async throws {
        // V1 used a single archive file
        let archiveURL = url.appending(path: "data.archive")
        guard FileManager.default.fileExists(atPath: archiveURL.path()) else {
            throw MigrationError.missingArchive
        }
        try await unpackLegacyArchive(at: archiveURL)
    }
}

enum MigrationError: Error {
    case unsupportedVersion(String)
    case missingArchive
    case importFailed(String)
}

// wrapper: Directory Enumeration for Export
struct DirectoryEnumerationExport: ResourcesExportingWithOptions {
    typealias OptionsType = MigrationDefaultSupportedOptions

    var resourcesSizeEstimate: Int { estimateSize() }
    var resourcesVersion: String { "1.0" }
    var resourcesCompressible: Bool { true }

    // verbatim
    func exportResources(
        to archiver: sending ResourcesArchiver,
        request: MigrationRequestWithOptions<MigrationDefaultSupportedOptions>
    ) async throws {
        let docs = appContainer.documentsDirectory
        let fm = FileManager.default

        guard
            let enumerator = fm.enumerator(
                at: docs,
                includingPropertiesForKeys: [.isRegularFileKey],
                options: [.skipsHiddenFiles, .skipsPackageDescendants]
            )
        else { return }

        for case let fileURL as URL in enumerator {
            let resourceValues = try fileURL.resourceValues(forKeys: [.isRegularFileKey])
            guard resourceValues.isRegularFile == true else { continue }

            // Compute relative path for archive
            let relativePath = fileURL.path().replacingOccurrences(
                of: docs.path(),
                with: ""
            )
            let archivePath = "documents\(relativePath)"

            try await archiver.appendItem(at: fileURL, pathInArchive: archivePath)
        }
    }
}

// wrapper: Platform-Specific Export
struct PlatformSpecificExport: ResourcesExportingWithOptions {
    typealias OptionsType = MigrationDefaultSupportedOptions

    var resourcesSizeEstimate: Int { estimateSize() }
    var resourcesVersion: String { "1.0" }
    var resourcesCompressible: Bool { true }

    // verbatim
    func exportResources(
        to archiver: sending ResourcesArchiver,
        request: MigrationRequestWithOptions<MigrationDefaultSupportedOptions>
    ) async throws {
        let docs = appContainer.documentsDirectory

        // Common data -- exported regardless of platform
        try await archiver.appendItem(
            at: docs.appending(path: "user_profile.json"),
            pathInArchive: "common/user_profile.json"
        )

        // Platform-specific data
        switch request.destinationPlatform {
        case .android:
            // Android app expects a specific database format
            try await archiver.appendItem(
                at: docs.appending(path: "app.sqlite"),
                pathInArchive: "database/app.db"
            )
        default:
            // iOS/default format
            try await archiver.appendItem(
                at: docs.appending(path: "app.sqlite"),
                pathInArchive: "database/app.sqlite"
            )
        }
    }
}

// verbatim: Selective Export with Options
struct MyMigration: ResourcesExportingWithOptions {
    typealias OptionsType = MigrationDefaultSupportedOptions

    var resourcesSizeEstimate: Int { estimateSize() }
    var resourcesVersion: String { "1.0" }
    var resourcesCompressible: Bool { true }

    func exportResources(
        to archiver: sending ResourcesArchiver,
        request: MigrationRequestWithOptions<MigrationDefaultSupportedOptions>
    ) async throws {
        let options = request.options
        let docs = appContainer.documentsDirectory

        // Check which categories the destination requested
        // edited: the type annotation; MigrationDefaultSupportedOptions has no cases, as on iOS,
        // where the compiler warns about the inferred type just the same
        for (option, _): (MigrationDefaultSupportedOptions, Data) in options {
            switch option {
            case _ where MigrationDefaultSupportedOptions.allCases.contains(option):
                // Handle known option
                break
            default:
                break
            }
        }

        // Export core data regardless of options
        try await archiver.appendItem(at: docs.appending(path: "core_data.json"))
    }
}

struct SimpleMigration: ResourcesExporting {
    var resourcesSizeEstimate: Int { estimateSize() }
    var resourcesVersion: String { "1.0" }
    var resourcesCompressible: Bool { true }

    func exportResources(
        to archiver: sending ResourcesArchiver,
        request: MigrationRequest
    ) async throws {
        // MigrationRequest has destinationPlatform but no options
        try await archiver.appendItem(at: appContainer.documentsDirectory)
    }
}

// verbatim: Error Recovery on Import
struct DefensiveMigration: ResourcesImporting {
    var resourcesImportProgress: Progress {
        Progress(totalUnitCount: 100)
    }

    func importResources(
        at importedDataURL: URL,
        request: ResourcesImportRequest
    ) async throws {
        let progress = resourcesImportProgress
        let fm = FileManager.default

        // Step 1: Clear shared containers before any writes
        clearAppGroupContainers()
        progress.completedUnitCount = 10

        // Step 2: Validate imported data before committing
        let manifest = try loadManifest(from: importedDataURL)
        try validateManifest(manifest, sourceVersion: request.sourceVersion)
        progress.completedUnitCount = 20

        // Step 3: Import with file-level error handling
        let files = try fm.contentsOfDirectory(
            at: importedDataURL,
            includingPropertiesForKeys: nil
        )
        let filesExcludingManifest = files.filter { $0.lastPathComponent != "manifest.json" }

        let progressPerFile = Int64(80 / max(filesExcludingManifest.count, 1))

        for file in filesExcludingManifest {
            do {
                try importFile(file)
                progress.completedUnitCount += progressPerFile
            } catch {
                // Log but continue -- partial import is better than none
                // for non-critical files
                if isCriticalFile(file) {
                    throw error  // System clears container on throw
                }
                logImportWarning(file: file, error: error)
            }
        }
        progress.completedUnitCount = 100
    }

    private func clearAppGroupContainers() {
        let fm = FileManager.default
        let groupIDs = ["group.com.example.myapp"]

        for groupID in groupIDs {
            guard
                let groupURL = fm.containerURL(
                    forSecurityApplicationGroupIdentifier: groupID
                )
            else { continue }

            // Remove migration-related data only, preserve other shared state
            let migrationDataURL = groupURL.appending(path: "migrated_data")
            try? fm.removeItem(at: migrationDataURL)
        }
    }

    private func isCriticalFile(_ url: URL) -> Bool {
        let criticalNames = ["user_profile.json", "account.json", "core_data.sqlite"]
        return criticalNames.contains(url.lastPathComponent)
    }
}

// verbatim: Migration Status in SwiftUI (the model; the SwiftUI views need SwiftUI and are not ported)
struct MigrationResult: Identifiable {
    let id = UUID()
    let succeeded: Bool
    let errorMessage: String?
}

// verbatim: File Size Estimation
struct AccurateSizeMigration: ResourcesExportingWithOptions {
    typealias OptionsType = MigrationDefaultSupportedOptions

    var resourcesSizeEstimate: Int {
        let docs = appContainer.documentsDirectory
        let appSupport = appContainer.applicationSupportDirectory

        // Calculate size of directories to export
        var total = 0
        total += sizeOfDirectory(docs, excludingPaths: ["Caches", "tmp"])
        total += sizeOfFile(appSupport.appending(path: "settings.json"))
        return total
    }

    var resourcesVersion: String { "1.0" }
    var resourcesCompressible: Bool { true }

    func exportResources(
        to archiver: sending ResourcesArchiver,
        request: MigrationRequestWithOptions<MigrationDefaultSupportedOptions>
    ) async throws {
        // Export implementation
    }

    // MARK: - Size calculation

    private func sizeOfDirectory(_ url: URL, excludingPaths: [String] = []) -> Int {
        let fm = FileManager.default
        guard
            let enumerator = fm.enumerator(
                at: url,
                includingPropertiesForKeys: [.fileSizeKey, .isRegularFileKey],
                options: [.skipsHiddenFiles]
            )
        else { return 0 }

        var total = 0
        for case let fileURL as URL in enumerator {
            // Skip excluded paths
            let relativePath = fileURL.path().replacingOccurrences(of: url.path(), with: "")
            if excludingPaths.contains(where: { relativePath.hasPrefix("/\($0)") }) {
                continue
            }

            let values = try? fileURL.resourceValues(forKeys: [.fileSizeKey, .isRegularFileKey])
            if values?.isRegularFile == true {
                total += values?.fileSize ?? 0
            }
        }
        return total
    }

    private func sizeOfFile(_ url: URL) -> Int {
        let values = try? url.resourceValues(forKeys: [.fileSizeKey])
        return values?.fileSize ?? 0
    }
}
