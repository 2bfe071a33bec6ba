// Ported from reference/appmigrationkit-skill.txt (the AppMigrationKit skill). The skill shows one
// type, MyMigrationExtension, in fragments: its export properties (a struct, verbatim), its
// `exportResources` and its `importResources` (free-standing methods, here in extensions of that
// struct, marked "wrapper"). The two other import variants are wrapped in structs of their own.
// The first fragment (`let container = appContainer` as a stored property) is not ported: a
// property initializer cannot read an instance property, in Swift on any platform.
import AppMigration
import Foundation

// verbatim: Declaring Export Properties
struct MyMigrationExtension: ResourcesExportingWithOptions {
    typealias OptionsType = MigrationDefaultSupportedOptions

    var resourcesSizeEstimate: Int {
        // Return estimated total bytes of exported data
        calculateExportSize()
    }

    var resourcesVersion: String {
        "1.0"
    }

    var resourcesCompressible: Bool {
        true  // Let the system compress during transport
    }
}

// wrapper: Implementing Export
extension MyMigrationExtension {
    // verbatim
    func exportResources(
        to archiver: sending ResourcesArchiver,
        request: MigrationRequestWithOptions<MigrationDefaultSupportedOptions>
    ) async throws {
        let docsDir = appContainer.documentsDirectory
        // Check destination platform if needed
        if request.destinationPlatform == .android {
            // Platform-specific export logic
        }
        // Append files one at a time -- make continuous progress
        let userDataURL = docsDir.appending(path: "user_data.json")
        try await archiver.appendItem(at: userDataURL)
        // Append with a custom archive path
        let settingsURL = docsDir.appending(path: "settings.plist")
        try await archiver.appendItem(at: settingsURL, pathInArchive: "preferences/settings.plist")
        // Append a directory
        let photosDir = docsDir.appending(path: "photos")
        try await archiver.appendItem(at: photosDir, pathInArchive: "media/photos")
    }
}

// wrapper: Importing Resources (`struct MyMigrationExtension: ResourcesImporting` in the skill)
extension MyMigrationExtension: ResourcesImporting {
    // verbatim, from Progress Tracking
    var resourcesImportProgress: Progress {
        Progress(totalUnitCount: 100)
    }

    // verbatim
    func importResources(
        at importedDataURL: URL,
        request: ResourcesImportRequest
    ) async throws {
        let sourceVersion = request.sourceVersion
        let sourceApp = request.sourceAppIdentifier
        // sourceApp.platform        -- e.g., .android
        // sourceApp.bundleIdentifier -- source app's bundle ID
        // sourceApp.storeIdentifier  -- e.g., .googlePlay
        // Copy imported files into the app container
        let docsDir = appContainer.documentsDirectory
        let userData = importedDataURL.appending(path: "user_data.json")
        if FileManager.default.fileExists(atPath: userData.path()) {
            try FileManager.default.copyItem(
                at: userData,
                to: docsDir.appending(path: "user_data.json")
            )
        }
        _ = (sourceVersion, sourceApp)  // added: the skill reads them for illustration only
    }
}

// wrapper: Error Handling During Import
struct AppGroupClearingImport: ResourcesImporting {
    // added: a requirement on iOS as here; the reference omits it
    let resourcesImportProgress = Progress(totalUnitCount: 100)
    // verbatim
    func importResources(
        at importedDataURL: URL,
        request: ResourcesImportRequest
    ) async throws {
        // Clear shared app group data first
        let groupURL = FileManager.default.containerURL(
            forSecurityApplicationGroupIdentifier: "group.com.example.myapp"
        )
        if let groupURL {
            try? FileManager.default.removeItem(at: groupURL.appending(path: "shared_data"))
        }
        // Then import
        try await performImport(from: importedDataURL)
    }
}

// wrapper: Progress Tracking
struct ProgressReportingImport: ResourcesImporting {
    // verbatim
    var resourcesImportProgress: Progress {
        Progress(totalUnitCount: 100)
    }

    func importResources(
        at importedDataURL: URL,
        request: ResourcesImportRequest
    ) async throws {
        let progress = resourcesImportProgress
        let files = try FileManager.default.contentsOfDirectory(
            at: importedDataURL, includingPropertiesForKeys: nil
        )
        let increment = Int64(100 / max(files.count, 1))
        for file in files {
            try processFile(file)
            progress.completedUnitCount += increment
        }
        progress.completedUnitCount = 100
    }
}
