import Foundation
internal import IndexedArchive

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The rule of the data-container entitlement: an extension reads only inside its own container.
///
/// Paths are compared by their real components, not as strings: symbolic links and `..` are
/// resolved by the kernel (`realpath`), so `Documents/../../etc` and a link from `Documents` to
/// `/etc` are both seen for what they are, and `/data/app2` is not taken to be inside `/data/app`.
struct ContainerConfinement: Sendable {
    /// The container root's real path, split into components.
    let rootComponents: [String]
    let rootPath: String
    /// The host's own folder (`.amk`) at the container's root, as a walk of the root reaches it.
    let hostDirectoryPath: String
    /// The real paths of the app's group containers that exist, split into components: an app's
    /// shared data is its to export (the import side writes it back there), as on iOS.
    let groupRoots: [[String]]
    let extensionName: String

    /// The real paths an export reads under: the container, and its app groups.
    var allowedRoots: [String] { [rootPath] + groupRoots.map { "/" + $0.joined(separator: "/") } }

    init(container: MigrationDataContainer, extensionName: String) throws {
        let root = container.containerRootDirectory.path(percentEncoded: false)
        guard let real = ContainerConfinement.realPath(root) else {
            throw AppMigrationError(
                .itemNotFound, "the container root cannot be resolved: \(String(cString: strerror(errno)))",
                extensionName: extensionName, path: root)
        }
        self.rootPath = real
        self.rootComponents = PathBytes.components(real)
        self.hostDirectoryPath = (real == "/" ? "" : real) + "/" + MigrationDataContainer.hostDirectoryName
        // A group folder that does not exist yet is resolved as far as it does: the extension's
        // `containerURL(forSecurityApplicationGroupIdentifier:)` creates it during the export,
        // and appending from it was refused when only existing folders were roots.
        self.groupRoots = container.appGroupDirectories.values.compactMap { group in
            ContainerConfinement.realPath(allowingMissing: group.path(percentEncoded: false)).map(PathBytes.components)
        }
        self.extensionName = extensionName
    }

    /// The real path of `url`, or an error if it is missing or lies outside the container.
    ///
    /// The last component is not resolved when it is a name: the engine stores a symbolic link as
    /// a link, never following it, so a link inside the container pointing out of it exports only
    /// its target's name.
    func resolve(_ url: URL) throws -> String {
        guard url.isFileURL else {
            throw AppMigrationError(.itemNotFound, "not a file URL: \(url)", extensionName: extensionName)
        }
        let path = url.absoluteURL.path(percentEncoded: false)
        // Before any system call: the system reads a path up to its first NUL, so `Documents/..\0`
        // was checked as a name in the container and then walked as its parent.
        guard !path.utf8.contains(0) else {
            throw AppMigrationError(
                .itemNotFound, "the path holds a NUL byte: no file is named so", extensionName: extensionName, path: path)
        }
        // Components and comparisons on bytes, as the kernel reads them (see PathBytes): a '/'
        // followed by a combining mark is one Swift Character, and canonically equal names are
        // different files.
        var components = PathBytes.components(path)
        let resolved: String
        if let last = components.last, !PathBytes.isDot(last), !PathBytes.isDotDot(last) {
            components.removeLast()
            let parent = "/" + components.joined(separator: "/")
            guard let realParent = ContainerConfinement.realPath(parent) else {
                throw AppMigrationError(
                    .itemNotFound, "cannot be resolved: \(String(cString: strerror(errno)))",
                    extensionName: extensionName, path: path)
            }
            resolved = (realParent == "/" ? "" : realParent) + "/" + last
        } else {
            guard let real = ContainerConfinement.realPath(path) else {
                throw AppMigrationError(
                    .itemNotFound, "cannot be resolved: \(String(cString: strerror(errno)))",
                    extensionName: extensionName, path: path)
            }
            resolved = real
        }
        let resolvedComponents = PathBytes.components(resolved)
        let inContainer = PathBytes.starts(resolvedComponents, with: rootComponents)
        guard inContainer || groupRoots.contains(where: { PathBytes.starts(resolvedComponents, with: $0) }) else {
            throw AppMigrationError(
                .outsideContainer,
                "refused: \(resolved) is outside the extension's container \(rootPath)"
                    + (groupRoots.isEmpty ? "" : " and its app groups"),
                extensionName: extensionName, path: path)
        }
        if inContainer, resolvedComponents.count > rootComponents.count,
            resolvedComponents[rootComponents.count].utf8.elementsEqual(MigrationDataContainer.hostDirectoryName.utf8)
        {
            throw AppMigrationError(
                .outsideContainer, "refused: \(resolved) is the migration host's own folder",
                extensionName: extensionName, path: path)
        }
        var status = stat()
        guard lstat(resolved, &status) == 0 else {
            throw AppMigrationError(
                .itemNotFound, "cannot be appended: \(String(cString: strerror(errno)))",
                extensionName: extensionName, path: path)
        }
        return resolved
    }

    /// The longest `pathInArchive` accepted, in bytes (Linux's `PATH_MAX`).
    static let maxPathInArchiveBytes = 4096

    /// `path` with the part of it that exists resolved (`realPath`), and the missing rest after
    /// it as it is: where a folder not made yet will be. Nil when nothing of it resolves.
    static func realPath(allowingMissing path: String) -> String? {
        if let real = realPath(path) { return real }
        var components = PathBytes.components(path)
        var missing: [String] = []
        while let last = components.popLast() {
            if PathBytes.isDot(last) || PathBytes.isDotDot(last) { return nil }
            missing.insert(last, at: 0)
            if let real = realPath("/" + components.joined(separator: "/")) {
                return (real == "/" ? "" : real) + "/" + missing.joined(separator: "/")
            }
        }
        return nil
    }

    static func realPath(_ path: String) -> String? {
        guard let pointer = realpath(path, nil) else { return nil }
        defer { free(pointer) }
        return String(cString: pointer)
    }

    /// `pathInArchive` made safe: leading `/` and `.` components dropped, `..` applied to the
    /// components before it. A path that would climb above the archive root, or is empty, is
    /// refused rather than silently rewritten.
    static func normalizedPathInArchive(_ given: String, extensionName: String) throws -> String {
        // Longer than a path can be (PATH_MAX): no system could extract it, the archive's index
        // would refuse it, and the host keeps every name for the whole export.
        guard given.utf8.count <= maxPathInArchiveBytes else {
            throw AppMigrationError(
                .invalidPathInArchive,
                "path in archive of \(given.utf8.count) bytes is longer than \(maxPathInArchiveBytes), the longest path a system takes",
                extensionName: extensionName)
        }
        var parts: [String] = []
        for part in PathBytes.components(given) {
            switch part {
            case _ where PathBytes.isDot(part):
                continue
            case _ where PathBytes.isDotDot(part):
                guard !parts.isEmpty else {
                    throw AppMigrationError(
                        .invalidPathInArchive, "path in archive '\(given)' climbs above the archive root",
                        extensionName: extensionName)
                }
                parts.removeLast()
            default:
                parts.append(part)
            }
        }
        guard !parts.isEmpty else {
            throw AppMigrationError(.invalidPathInArchive, "path in archive '\(given)' is empty", extensionName: extensionName)
        }
        guard !given.utf8.contains(0) else {
            throw AppMigrationError(.invalidPathInArchive, "path in archive contains a NUL byte", extensionName: extensionName)
        }
        // The host's folder is not the app's data, by any name: `appendItem` refuses the real
        // one, and a file appended as `.amk/import-status.json` would reach an importer that
        // copies the staged items into the container as the host's own status.
        guard !parts[0].utf8.elementsEqual(MigrationDataContainer.hostDirectoryName.utf8) else {
            throw AppMigrationError(
                .invalidPathInArchive,
                "path in archive '\(given)' is inside '\(MigrationDataContainer.hostDirectoryName)', "
                    + "the migration host's own folder", extensionName: extensionName)
        }
        return parts.joined(separator: "/")
    }
}
