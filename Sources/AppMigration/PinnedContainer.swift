import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A container's root and its host folder (`.amk`) as they were when an import began, by device
/// and inode, so that what the host does after the extension has run (clear the container, record
/// the status) lands where it would have then.
///
/// The host reaches both by path, and the extension, which may write anywhere in its container,
/// could move them away and leave links in their place: the failure's clearing then went to
/// another app's marked container that the link named, and the status (and a success's too) into
/// any folder. The root may be a link from the start (that is the caller's choice): it is the
/// folder it leads to that is pinned. The host folder never is.
struct PinnedContainer: Sendable {
    private let root: (device: UInt64, inode: UInt64)
    private let host: (device: UInt64, inode: UInt64)?

    init(_ container: MigrationDataContainer, extensionName: String) throws {
        guard let root = Self.identity(container.containerRootDirectory, following: true) else {
            throw AppMigrationError(
                .notAContainer, "the container's root cannot be read: \(String(cString: strerror(errno)))",
                extensionName: extensionName, path: container.containerRootDirectory.path(percentEncoded: false))
        }
        self.root = root
        host = Self.identity(container.hostDirectory, following: false)
    }

    /// The error to answer with when the root or the host folder is no longer the one pinned (and
    /// nothing may be cleared or recorded through it), or nil when both still are. `error` is the
    /// import's own, if it failed.
    func replacement(in container: MigrationDataContainer, extensionName: String, after error: (any Error)?) -> AppMigrationError? {
        let rootNow = Self.identity(container.containerRootDirectory, following: true)
        let hostNow = Self.identity(container.hostDirectory, following: false)
        let sameRoot = rootNow.map { $0 == root } ?? false
        // A host folder made during the import (there was none) is taken as it is now, if a folder.
        let sameHost = host.map { pinned in hostNow.map { $0 == pinned } ?? false } ?? (hostNow != nil)
        guard !sameRoot || !sameHost else { return nil }
        let what = sameRoot ? "host folder (.amk)" : "root"
        return AppMigrationError(
            .extensionFailed,
            "the container's \(what) was moved or replaced while the extension imported; nothing was cleared and no status "
                + "was recorded, since either would have gone elsewhere" + (error.map { " (the import had failed: \($0))" } ?? ""),
            extensionName: extensionName, path: container.containerRootDirectory.path(percentEncoded: false))
    }

    /// The device and inode of the folder at `url` (following a final link or not); nil when it
    /// is missing, not a folder, or (not following) a link.
    private static func identity(_ url: URL, following: Bool) -> (device: UInt64, inode: UInt64)? {
        var info = stat()
        let path = url.path(percentEncoded: false)
        let result = following ? stat(path, &info) : lstat(path, &info)
        guard result == 0, info.st_mode & S_IFMT == S_IFDIR else { return nil }
        return (UInt64(info.st_dev), UInt64(info.st_ino))
    }
}
