/// An extension that exports the app's data, with options of its own that the destination may
/// request.
///
/// The host calls ``exportResources(to:request:)`` once, under a watchdog: the extension appends
/// files and folders to the archiver one at a time, and must not go silent between appends for
/// longer than the stall timeout, or the export is cancelled; it must let `CancellationError`
/// propagate, or it is terminated.
public protocol ResourcesExportingWithOptions: AppMigrationExtension {
    /// The data categories a destination may ask for.
    associatedtype OptionsType: CaseIterable, Hashable, RawRepresentable, Sendable where OptionsType.RawValue == String

    /// Appends the data to export to `archiver`.
    func exportResources(
        to archiver: sending ResourcesArchiver,
        request: MigrationRequestWithOptions<OptionsType>) async throws

    /// About how many bytes the export will hold; recorded in the archive so that the destination
    /// can show progress and check its free space before it starts. Overestimate rather than under.
    var resourcesSizeEstimate: Int { get async }

    /// The version of the exported data's format; the importer receives it as
    /// ``ResourcesImportRequest/sourceVersion``.
    var resourcesVersion: String { get }

    /// Whether the data is worth compressing. `false` (media, already-compressed files) stores it
    /// as it is, which is much faster and no larger.
    var resourcesCompressible: Bool { get }
}
