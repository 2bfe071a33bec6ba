import AppMigration
import Foundation

/// ``SampleAppMigration`` with its archive stored, not compressed: for media-heavy containers,
/// where compressing is time spent for nothing. A type of its own because an extension process
/// makes its extension with `init()`.
struct StoredSampleAppMigration: ResourcesExporting, ResourcesImporting {
    private let sample = SampleAppMigration(compressible: false)

    var resourcesSizeEstimate: Int { sample.resourcesSizeEstimate }
    var resourcesVersion: String { sample.resourcesVersion }
    var resourcesCompressible: Bool { false }
    var resourcesImportProgress: Progress { sample.resourcesImportProgress }

    func exportResources(to archiver: sending ResourcesArchiver, request: MigrationRequest) async throws {
        try await sample.exportResources(to: archiver, request: request)
    }

    func importResources(at url: URL, request: ResourcesImportRequest) async throws {
        try await sample.importResources(at: url, request: request)
    }
}
