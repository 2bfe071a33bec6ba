public import Foundation
import IndexedArchive

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
///    `AMK_CONTAINER_ROOT` environment variable, with the bundle identifier from
///    `AMK_BUNDLE_IDENTIFIER` or the main bundle. Without that variable there is no container:
///    a desktop or server process's home folder is not one (on iOS the home folder *is* the
///    container, but a failed import clears the container, and clearing a user's home folder is
///    not a fallback anyone wants). `current` is then a container whose folders do not exist and
///    that every host operation refuses with ``AppMigrationError/Code/notAContainer``.
///
/// The host clears a container after a failed import, so it only ever clears one it knows:
/// ``createStandardDirectories()`` marks the container (`.amk/container`), and an import refuses,
/// before the extension runs, a folder that holds data but no mark.
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
        self.containerRootDirectory =
            URL(
                filePath: containerRootDirectory.path(percentEncoded: false),
                directoryHint: .notDirectory
            ).standardizedFileURL
        self.appGroupDirectories = appGroupDirectories
        self.documentsDirectory = self.containerRootDirectory.appending(path: "Documents", directoryHint: .notDirectory)
        self.applicationSupportDirectory = self.containerRootDirectory.appending(
            path: "Library/Application Support",
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
    /// The mark ``createStandardDirectories()`` leaves in the host's folder.
    static let markerName = "container"

    /// False for the stand-in `current` returns when no container is configured.
    var isConfigured = true

    /// Where no container is configured: a path under a file, so that nothing can be created there.
    static let unconfiguredRoot = URL(filePath: "/dev/null/amk-no-container-configured", directoryHint: .isDirectory)

    /// Whether the host may use this container for an import, which clears it if it fails: it was
    /// configured, and it is marked by ``createStandardDirectories()`` or holds nothing yet
    /// (absent or empty, it is then marked).
    /// - Throws: ``AppMigrationError`` `.notAContainer` saying why not.
    package func checkKnown(extensionName: String) throws {
        let root = containerRootDirectory.path(percentEncoded: false)
        guard isConfigured else {
            throw AppMigrationError(
                .notAContainer,
                "no container is configured: outside a host, MigrationDataContainer.current "
                    + "needs AMK_CONTAINER_ROOT (or pass a container)", extensionName: extensionName)
        }
        try checkHostDirectory()
        let marker = hostDirectory.appending(path: Self.markerName).path(percentEncoded: false)
        if Self.fileType(marker) == S_IFREG { return }
        let contents = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        guard contents.allSatisfy({ $0 == Self.hostDirectoryName }) else {
            throw AppMigrationError(
                .notAContainer,
                "'\(TerminalSafe.name(root))' holds data but is not marked as a container "
                    + "(no .amk/container, which createStandardDirectories() writes): a failed import would "
                    + "clear it, so the host will not import into it", extensionName: extensionName,
                path: root)
        }
        try createStandardDirectories()
    }

    /// Creates the container's standard folders (`Documents`, `Library/Application Support`,
    /// `tmp`) if they are missing, and marks the folder as a container (`.amk/container`), which
    /// is what lets the host import into it (and clear it if the import fails).
    ///
    /// Nothing is created through a link: a standard folder, or a folder above it, that is a
    /// symbolic link (or a file) is left as it is, and a `.amk` that is a link is refused with
    /// ``AppMigrationError/Code/notAContainer``.
    public func createStandardDirectories() throws {
        guard isConfigured else {
            throw AppMigrationError(
                .notAContainer,
                "no container is configured: outside a host, MigrationDataContainer.current "
                    + "needs AMK_CONTAINER_ROOT (or pass a container)")
        }
        for directory in [documentsDirectory, applicationSupportDirectory, temporaryDirectory] {
            try createFollowingNoLink(directory)
        }
        try checkHostDirectory()
        let marker = hostDirectory.appending(path: Self.markerName).path(percentEncoded: false)
        if !FileManager.default.fileExists(atPath: marker) {
            try DurableFile.createDirectory(hostDirectory.path(percentEncoded: false))
            try DurableFile.write(Data("bundle \(bundleIdentifier)\n".utf8), to: marker)
        }
    }

    /// What `lstat` says is at `path`: nil when nothing is.
    private static func fileType(_ path: String) -> mode_t? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return info.st_mode & S_IFMT
    }

    /// Creates `directory` and the folders above it, down from the root, without creating
    /// anything through a link: a folder of the container that is a link (or a file) is left as it
    /// is, and nothing below it is made. `Library` linked to a folder outside once got
    /// `Application Support` created out there, and an import's files after it.
    private func createFollowingNoLink(_ directory: URL) throws {
        var root = containerRootDirectory.path(percentEncoded: false)
        while root.count > 1, root.hasSuffix("/") { root.removeLast() }
        let target = directory.path(percentEncoded: false)
        guard target.hasPrefix(root + "/") else {
            // Set by the caller to somewhere else: theirs to choose.
            var folder = target
            while folder.count > 1, folder.hasSuffix("/") { folder.removeLast() }
            try DurableFile.createDirectory(folder)
            return
        }
        // DurableFile's errors name the folder and the system's reason (a read-only volume, a
        // missing permission); Foundation's printed as a dump of its user info.
        try DurableFile.createDirectory(root)
        var current = root
        for component in target.dropFirst(root.count + 1).split(separator: "/") {
            current += "/" + component
            switch Self.fileType(current) {
            case S_IFDIR?:
                continue
            case nil:
                if mkdir(current, 0o755) != 0 && errno != EEXIST {
                    throw DurableFileError(operation: "mkdir", path: current, errno: errno)
                }
            default:
                return
            }
        }
    }

    /// Refuses a host folder (`.amk`) that is not a real folder: its lock, marker and import
    /// status would be written where a link leads, outside the container.
    private func checkHostDirectory() throws {
        let path = hostDirectory.path(percentEncoded: false)
        switch Self.fileType(path) {
        case nil, S_IFDIR?:
            return
        case S_IFLNK?:
            throw AppMigrationError(
                .notAContainer,
                "'\(TerminalSafe.name(path))' is a symbolic link: the host's folder must be a real folder, "
                    + "or its lock, marker and import status would be written where the link leads",
                path: path)
        default:
            throw AppMigrationError(
                .notAContainer, "'\(TerminalSafe.name(path))' is not a folder: the host keeps its lock and marker there",
                path: path)
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
        let bundle =
            environment["AMK_BUNDLE_IDENTIFIER"] ?? Bundle.main.bundleIdentifier
            ?? ProcessInfo.processInfo.processName
        guard let root = environment["AMK_CONTAINER_ROOT"].map({ URL(filePath: $0) }) else {
            var none = MigrationDataContainer(bundleIdentifier: bundle, containerRootDirectory: unconfiguredRoot)
            none.isConfigured = false
            return none
        }
        let groups = environment[appGroupsVariable].map(decodeAppGroups) ?? [:]
        return MigrationDataContainer(bundleIdentifier: bundle, containerRootDirectory: root, appGroupDirectories: groups)
    }

    /// The environment variable that gives an extension process its container's app groups: a
    /// JSON object of group identifiers to folder paths (`{"group.com.example.app":"/data/group"}`).
    /// Without it, `containerURL(forSecurityApplicationGroupIdentifier:)` found no group in the
    /// process, and an extension's clearing of its group data before an import did nothing.
    package static let appGroupsVariable = "AMK_APP_GROUPS"

    /// `groups` as ``appGroupsVariable`` holds them; nil when there are none.
    package static func encodeAppGroups(_ groups: [String: URL]) -> String? {
        guard !groups.isEmpty else { return nil }
        let paths = groups.mapValues { $0.path(percentEncoded: false) }
        guard let data = try? JSONSerialization.data(withJSONObject: paths, options: [.sortedKeys]) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// The groups ``appGroupsVariable`` gives; none for a value that is not such an object.
    static func decodeAppGroups(_ text: String) -> [String: URL] {
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: String] else { return [:] }
        return object.mapValues { URL(filePath: $0, directoryHint: .isDirectory) }
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
