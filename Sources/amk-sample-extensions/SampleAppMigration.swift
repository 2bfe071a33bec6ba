import AppMigration
import Foundation

/// Exports `Documents` and `Library/Application Support` under those names; imports them back by
/// moving the staged folders into place (the staging folder is in the container, so a move is a
/// rename: no second copy of the data).
struct SampleAppMigration: ResourcesExporting, ResourcesImporting {
    static let applicationSupportName = "Application Support"

    var compressible = true

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
            try SampleFiles.mergeReceivedFolder(named: name, in: url, into: destination, under: appContainer.containerRootDirectory)
            progress.completedUnitCount = progress.totalUnitCount * Int64(index + 1) / Int64(pairs.count)
        }
    }
}
