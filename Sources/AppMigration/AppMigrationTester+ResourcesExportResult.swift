public import Foundation

extension AppMigrationTester {
    /// The outcome of a test export: the files as the destination would receive them, and the
    /// export's properties.
    public struct ResourcesExportResult: Sendable {
        /// A folder holding the exported archive's contents, extracted as an import would extract
        /// them; pass it to the import controller to test the round trip.
        public let extractedResourcesURL: URL
        /// Sizes and version of the export.
        public let exportProperties: AppMigrationTester.DeviceToDeviceExportProperties
        /// The archive itself, for tests that inspect it (not in AppMigrationKit).
        public let archiveURL: URL

        /// A result for an export extracted at `extractedResourcesURL` from `archiveURL`.
        public init(
            extractedResourcesURL: URL, exportProperties: AppMigrationTester.DeviceToDeviceExportProperties,
            archiveURL: URL
        ) {
            self.extractedResourcesURL = extractedResourcesURL
            self.exportProperties = exportProperties
            self.archiveURL = archiveURL
        }
    }

    /// What an export produced: AppMigrationKit names the type inside the tester; here it is the
    /// same type the host's ``MigrationSystem/exportResources(of:named:from:request:to:sourceApp:progress:)``
    /// returns.
    public typealias DeviceToDeviceExportProperties = AppMigration.DeviceToDeviceExportProperties
}

/// The tester's export result under its former, top-level name.
@available(*, deprecated, renamed: "AppMigrationTester.ResourcesExportResult")
public typealias ResourcesExportResult = AppMigrationTester.ResourcesExportResult
