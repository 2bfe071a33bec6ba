/// The entry point of an app's migration extension.
///
/// An extension adopts ``ResourcesExportingWithOptions`` (or ``ResourcesExporting``) to send data
/// and ``ResourcesImporting`` to receive it. The host runs it with exclusive access to the app's
/// container, which the extension reads through ``appContainer``.
public protocol AppMigrationExtension: Sendable {
    /// The containing app's data container. The default implementation returns the container the
    /// host bound for the running code (see ``MigrationDataContainer/current``); extensions do not
    /// implement it.
    var appContainer: MigrationDataContainer { get }
}

extension AppMigrationExtension {
    public var appContainer: MigrationDataContainer {
        MigrationDataContainer.current
    }
}
