import AppMigration
import Foundation

/// The migration extension `amk send` and `amk receive` run by default (`--extension files`):
/// the container's `Documents` and `Library` as they are.
///
/// It exists so that a transfer can be tried without writing an extension: it exports both
/// folders whole and imports them by merging the received files into the container, replacing
/// files of the same name. The merge follows no link (see ``SampleFiles``): a received folder
/// that is a link is refused, a link inside one arrives as a link.
struct ContainerFilesMigration: ResourcesExporting, ResourcesImporting {
    /// The folders exported, relative to the container's root.
    static let folders = ["Documents", "Library"]

    var resourcesVersion: String { "1" }

    /// The import's progress: one object, advanced as the import goes.
    let resourcesImportProgress = Progress(totalUnitCount: 100)
    var resourcesCompressible: Bool { true }

    var resourcesSizeEstimate: Int {
        get async {
            var total = 0
            let root = appContainer.containerRootDirectory
            for folder in Self.folders {
                let url = root.appending(path: folder, directoryHint: .isDirectory)
                guard let walker = FileManager.default.enumerator(at: url, includingPropertiesForKeys: [.fileSizeKey]) else {
                    continue
                }
                while let item = walker.nextObject() as? URL {
                    total += (try? item.resourceValues(forKeys: [.fileSizeKey]).fileSize) ?? 0
                }
            }
            return total
        }
    }

    func exportResources(to archiver: sending ResourcesArchiver, request: MigrationRequest) async throws {
        let root = appContainer.containerRootDirectory
        for folder in Self.folders {
            let url = root.appending(path: folder, directoryHint: .isDirectory)
            guard FileManager.default.fileExists(atPath: url.path(percentEncoded: false)) else { continue }
            try await archiver.appendItem(at: url, pathInArchive: folder)
        }
    }

    func importResources(at url: URL, request: ResourcesImportRequest) async throws {
        let root = appContainer.containerRootDirectory
        for folder in Self.folders {
            try Task.checkCancellation()
            try SampleFiles.mergeReceivedFolder(
                named: folder, in: url,
                into: root.appending(path: folder, directoryHint: .isDirectory), under: root)
        }
        resourcesImportProgress.completedUnitCount = resourcesImportProgress.totalUnitCount
    }
}
