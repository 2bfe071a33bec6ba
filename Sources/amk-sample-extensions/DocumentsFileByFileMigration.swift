import AppMigration
import Foundation

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
            // A link to a folder is a link (lstat): the walk does not enter it, so skipping it
            // as a folder whose files come separately once lost it.
            if SampleFiles.kind(of: url) == .directory,
                (try? FileManager.default.contentsOfDirectory(atPath: url.path(percentEncoded: false)))?.isEmpty == false
            {
                continue
            }
            try await archiver.appendItem(at: url, pathInArchive: "documents/\(relative)")
        }
    }

    func importResources(at url: URL, request: ResourcesImportRequest) async throws {
        try SampleFiles.mergeReceivedFolder(
            named: "documents", in: url, into: appContainer.documentsDirectory, under: appContainer.containerRootDirectory)
        resourcesImportProgress.completedUnitCount = resourcesImportProgress.totalUnitCount
    }
}
