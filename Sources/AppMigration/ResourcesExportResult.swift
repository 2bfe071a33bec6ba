public import Foundation

/// The outcome of a test export by ``AppMigrationTester``: the files as the destination would
/// receive them, and the export's properties.
public struct ResourcesExportResult: Sendable {
    /// A folder holding the exported archive's contents, extracted as an import would extract
    /// them; pass it to the import controller to test the round trip.
    public var extractedResourcesURL: URL
    /// Sizes and version of the export.
    public var exportProperties: DeviceToDeviceExportProperties
    /// The archive itself, for tests that inspect it.
    public var archiveURL: URL

    /// A result for an export extracted at `extractedResourcesURL` from `archiveURL`.
    public init(extractedResourcesURL: URL, exportProperties: DeviceToDeviceExportProperties, archiveURL: URL) {
        self.extractedResourcesURL = extractedResourcesURL
        self.exportProperties = exportProperties
        self.archiveURL = archiveURL
    }
}
