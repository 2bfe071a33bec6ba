/// The entry point of an app's migration extension.
///
/// An extension adopts ``ResourcesExportingWithOptions`` (or ``ResourcesExporting``) to send data
/// and ``ResourcesImporting`` to receive it. The host runs it with exclusive access to the app's
/// container, which the extension reads through ``appContainer``.
public protocol AppMigrationExtension: Sendable {
    /// Creates the extension. As AppMigrationKit's `AppExtension` does, the protocol requires an
    /// initializer without arguments: an extension executable's entry point (``main()``) makes
    /// its extension with it.
    init()
    /// The containing app's data container. The default implementation returns the container the
    /// host bound for the running code (see ``MigrationDataContainer/current``); extensions do not
    /// implement it.
    var appContainer: MigrationDataContainer { get }
}

extension AppMigrationExtension {
    /// The container the host bound for the running code (``MigrationDataContainer/current``).
    public var appContainer: MigrationDataContainer {
        MigrationDataContainer.current
    }
}

extension AppMigrationExtension {
    /// The entry point of an extension executable, as on iOS: mark the extension type `@main`.
    ///
    /// ```swift
    /// @main
    /// struct NotesMigration: ResourcesExporting, ResourcesImporting {
    ///     init() {}
    ///     // ...
    /// }
    /// ```
    ///
    /// Started by a host (``MigrationSystem`` given an ``ExtensionExecutable``, or
    /// `amk export --extension-executable PATH`), it speaks the extension protocol on the
    /// descriptor the host passed, runs the one export or import the host asks for, reports the
    /// result and exits: 0 after success, 1 after a failure. Started by hand, it says what it is
    /// and exits with status 64.
    public static func main() async {
        await ExtensionRuntime.serve(Self())
    }
}
