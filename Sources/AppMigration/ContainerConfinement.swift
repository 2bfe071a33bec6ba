import Foundation
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
    let rootComponents: [Substring]
    let rootPath: String
    let extensionName: String

    init(container: MigrationDataContainer, extensionName: String) throws {
        let root = container.containerRootDirectory.path(percentEncoded: false)
        guard let real = ContainerConfinement.realPath(root) else {
            throw AppMigrationError(.itemNotFound, "the container root cannot be resolved: \(String(cString: strerror(errno)))",
                                    extensionName: extensionName, path: root)
        }
        self.rootPath = real
        self.rootComponents = real.split(separator: "/")
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
        var components = path.split(separator: "/")
        let resolved: String
        if let last = components.last, last != ".", last != ".." {
            components.removeLast()
            let parent = "/" + components.joined(separator: "/")
            guard let realParent = ContainerConfinement.realPath(parent) else {
                throw AppMigrationError(.itemNotFound, "cannot be resolved: \(String(cString: strerror(errno)))",
                                        extensionName: extensionName, path: path)
            }
            resolved = (realParent == "/" ? "" : realParent) + "/" + last
        } else {
            guard let real = ContainerConfinement.realPath(path) else {
                throw AppMigrationError(.itemNotFound, "cannot be resolved: \(String(cString: strerror(errno)))",
                                        extensionName: extensionName, path: path)
            }
            resolved = real
        }
        let resolvedComponents = resolved.split(separator: "/")
        guard resolvedComponents.starts(with: rootComponents) else {
            throw AppMigrationError(
                .outsideContainer,
                "refused: \(resolved) is outside the extension's container \(rootPath)",
                extensionName: extensionName, path: path)
        }
        if resolvedComponents.count > rootComponents.count,
           resolvedComponents[rootComponents.count] == Substring(MigrationDataContainer.hostDirectoryName) {
            throw AppMigrationError(.outsideContainer, "refused: \(resolved) is the migration host's own folder",
                                    extensionName: extensionName, path: path)
        }
        var status = stat()
        guard lstat(resolved, &status) == 0 else {
            throw AppMigrationError(.itemNotFound, "cannot be appended: \(String(cString: strerror(errno)))",
                                    extensionName: extensionName, path: path)
        }
        return resolved
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
        var parts: [Substring] = []
        for part in given.split(separator: "/") {
            switch part {
            case ".":
                continue
            case "..":
                guard !parts.isEmpty else {
                    throw AppMigrationError(.invalidPathInArchive, "path in archive '\(given)' climbs above the archive root",
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
        return parts.joined(separator: "/")
    }
}
