public import Foundation

/// An extension that imports data exported from the app on another device.
///
/// The host extracts the archive into a staging folder inside the container, then calls
/// ``importResources(at:request:)``. If it throws, the host clears the app's data container (but
/// not its app-group containers: clear those yourself before writing to them) and records the
/// failure for the app to read in ``MigrationStatus/importStatus``.
public protocol ResourcesImporting: AppMigrationExtension {
    /// Moves or copies what it needs from `url`, the extracted data, into the app's container.
    func importResources(at url: URL, request: ResourcesImportRequest) async throws

    /// The import's progress. Return the same object every time and advance it as work is done:
    /// the host reads it once, mirrors it into the progress it reports, and counts its advances as
    /// signs of life.
    var resourcesImportProgress: Progress { get }
}
