public import Foundation

/// The containing app's data container: the directories an extension exports from and imports
/// into.
///
/// On iOS the system knows the container from the extension's entitlement. Here the host says
/// which container is current, in one of two ways, checked in this order:
///
/// 1. A task-local binding, made with ``withCurrent(_:operation:)-(_,_)``. ``MigrationSystem`` and
///    ``AppMigrationTester`` bind the container for the extension code they run, so an extension's
///    ``AppMigrationExtension/appContainer`` and ``MigrationStatus/importStatus`` see the right
///    container even when several migrations run at once in one process.
/// 2. Otherwise the process's own container, as an app sees it: the directory named by the
///    `AMK_CONTAINER_ROOT` environment variable, or else the home directory (which on iOS *is* the
///    app's container), with the bundle identifier from `AMK_BUNDLE_IDENTIFIER` or the main
///    bundle.
///
/// App-group containers live outside the container root, so the host configures them separately
/// (``appGroupDirectories``): a failed import clears the container but leaves them alone, as on iOS.
public struct MigrationDataContainer: Sendable, Hashable {
    /// The containing app's bundle identifier.
    public let bundleIdentifier: String
    /// The root of the container: `Documents`, `Library` and `tmp` live under it.
    public let containerRootDirectory: URL
    /// App-group containers shared with this app, by group identifier.
    public let appGroupDirectories: [String: URL]

    /// - Parameters:
    ///   - bundleIdentifier: the app's bundle identifier.
    ///   - containerRootDirectory: the container's root folder.
    ///   - appGroupDirectories: app-group containers by group identifier; they must lie outside
    ///     the container root, as on iOS.
    public init(bundleIdentifier: String, containerRootDirectory: URL, appGroupDirectories: [String: URL] = [:]) {
        self.bundleIdentifier = bundleIdentifier
        // Without a trailing slash, so that `documentsDirectory.path()` is a prefix of the paths
        // of the files under it without a doubled separator (the directory-enumeration pattern
        // relies on it).
        self.containerRootDirectory = URL(filePath: containerRootDirectory.path(percentEncoded: false),
                                          directoryHint: .notDirectory).standardizedFileURL
        self.appGroupDirectories = appGroupDirectories
        self.documentsDirectory = self.containerRootDirectory.appending(path: "Documents", directoryHint: .notDirectory)
        self.applicationSupportDirectory = self.containerRootDirectory.appending(path: "Library/Application Support",
                                                                                 directoryHint: .notDirectory)
    }

    /// `Documents` in the container, unless set otherwise.
    ///
    /// Settable, as in AppMigrationKit. The value is only a URL the extension and the app agree
    /// on: the host confines exports to ``containerRootDirectory`` and clears that root after a
    /// failed import, whatever this property says, so a folder set outside the root cannot be
    /// exported from and is not cleared.
    public var documentsDirectory: URL

    /// `Library/Application Support` in the container, unless set otherwise. Settable, with the
    /// same caveat as ``documentsDirectory``.
    public var applicationSupportDirectory: URL

    /// `Library` in the container.
    public var libraryDirectory: URL {
        containerRootDirectory.appending(path: "Library", directoryHint: .notDirectory)
    }

    /// `tmp` in the container: scratch space inside the extension's confinement, so a file written
    /// there (a manifest, say) may be appended to an export.
    public var temporaryDirectory: URL {
        containerRootDirectory.appending(path: "tmp", directoryHint: .notDirectory)
    }

    /// The host's own folder in the container: the migration lock, the persisted import status
    /// and import staging. Clearing the container after a failed import keeps it.
    var hostDirectory: URL {
        containerRootDirectory.appending(path: MigrationDataContainer.hostDirectoryName, directoryHint: .notDirectory)
    }

    static let hostDirectoryName = ".amk"

    /// Creates the container's standard folders (`Documents`, `Library/Application Support`,
    /// `tmp`) if they are missing.
    public func createStandardDirectories() throws {
        for directory in [documentsDirectory, applicationSupportDirectory, temporaryDirectory] {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        }
    }

    // MARK: - The current container

    @TaskLocal static var bound: MigrationDataContainer?

    /// The container of the code that is running: the one bound to this task, or the process's.
    public static var current: MigrationDataContainer {
        bound ?? processContainer
    }

    /// The process's own container, when no host has bound one (see the type's documentation).
    public static var processContainer: MigrationDataContainer {
        let environment = ProcessInfo.processInfo.environment
        let root = environment["AMK_CONTAINER_ROOT"].map { URL(filePath: $0) }
            ?? FileManager.default.homeDirectoryForCurrentUser
        let bundle = environment["AMK_BUNDLE_IDENTIFIER"] ?? Bundle.main.bundleIdentifier
            ?? ProcessInfo.processInfo.processName
        return MigrationDataContainer(bundleIdentifier: bundle, containerRootDirectory: root)
    }

    /// Runs `operation` with `container` as the current container of this task and its children.
    public static func withCurrent<T>(
        _ container: MigrationDataContainer,
        isolation: isolated (any Actor)? = #isolation,
        operation: () async throws -> T
    ) async rethrows -> T {
        try await $bound.withValue(container, operation: operation)
    }

    /// Runs synchronous `operation` with `container` as the current container.
    public static func withCurrent<T>(_ container: MigrationDataContainer, operation: () throws -> T) rethrows -> T {
        try $bound.withValue(container, operation: operation)
    }
}
