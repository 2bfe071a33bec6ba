/// What an importer is told about the data it receives.
///
/// `sourceVersion` is the exporter's ``ResourcesExportingWithOptions/resourcesVersion``, carried
/// in the archive's metadata, so that an importer can read every format it has ever exported.
public struct ResourcesImportRequest: Sendable, Hashable {
    /// The app that exported the data.
    public var sourceAppIdentifier: MigrationAppIdentifier
    /// The exporter's `resourcesVersion`.
    public var sourceVersion: String

    /// A request for data exported by `sourceAppIdentifier` in format `sourceVersion`.
    public init(sourceAppIdentifier: MigrationAppIdentifier, sourceVersion: String) {
        self.sourceAppIdentifier = sourceAppIdentifier
        self.sourceVersion = sourceVersion
    }
}
