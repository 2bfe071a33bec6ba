public import Foundation
import IndexedArchive
import Synchronization

/// Streams what an export extension appends into the archive being written.
///
/// Each ``appendItem(at:pathInArchive:)`` is packed as it arrives; nothing is staged on disk. While
/// the compressors are busy an append suspends (backpressure), and that wait does not count
/// against the extension's stall timeout: the watchdog watches the engine's stages instead.
///
/// `Sendable` because everything it holds is: the engine's `ArchiveBuilder` (an actor, which takes
/// appends one at a time), the `Watchdog` (lock-protected), immutable configuration, and a count
/// of appends in flight kept in a `Mutex`; or, in an extension process, a `Sendable` closure.
///
/// In an extension process (see ``ExtensionExecutable``) each append is a request to the host,
/// which checks and packs the item exactly as above, and answers.
public final class ResourcesArchiver: Sendable {
    private enum Backend: Sendable {
        case engine(builder: ArchiveBuilder, watchdog: Watchdog?, confinement: ContainerConfinement)
        /// In an extension process: the absolute path and `pathInArchive`, sent to the host.
        case host(@Sendable (_ path: String, _ pathInArchive: String?) async throws -> Void)
    }

    private let backend: Backend
    /// Appends running now; the extension's own code counts as running only while it is zero.
    private let appendsInFlight = Mutex(0)

    init(builder: ArchiveBuilder, watchdog: Watchdog?, confinement: ContainerConfinement) {
        self.backend = .engine(builder: builder, watchdog: watchdog, confinement: confinement)
    }

    init(host: @escaping @Sendable (_ path: String, _ pathInArchive: String?) async throws -> Void) {
        self.backend = .host(host)
    }

    /// Adds a file, or a folder and everything under it, to the archive.
    ///
    /// - Parameters:
    ///   - url: a file or folder inside the extension's container or one of its app groups
    ///     (``MigrationDataContainer/appGroupDirectories``). Symbolic links and `..` are
    ///     resolved before the check; a path outside them is refused with
    ///     ``AppMigrationError/Code/outsideContainer``. A symbolic link is stored as a link.
    ///   - pathInArchive: where it goes in the archive, `/`-separated; `nil` means the URL's last
    ///     component. It is used as given, except that it can never escape the archive root: a
    ///     leading `/` and `.` components are dropped, and a path that climbs above the root with
    ///     `..` is refused.
    /// - Throws: `CancellationError` once the export is cancelled, also when compressing or writing
    ///   the archive failed, which the export then fails with (let it propagate: an extension
    ///   that swallows it is terminated), ``AppMigrationError`` for a refused path (outside the
    ///   container, or a `pathInArchive` already taken, under one stored as a file, or with a
    ///   component longer than a file name, or a folder holding a name already in the archive:
    ///   nothing of it is then stored, and the export may go on), and
    ///   ``AppMigrationError/Code/itemUnreadable`` for an item that could not be read or added
    ///   (the engine's error in its message and `underlying`), also for an append after
    ///   `exportResources(to:request:)` returned.
    public func appendItem(at url: URL, pathInArchive: String? = nil) async throws {
        try Task.checkCancellation()
        switch backend {
        case .engine(let builder, let watchdog, let confinement):
            let source = try confinement.resolve(url)
            try Self.refuseSpecialFile(source, extensionName: confinement.extensionName)
            let name = try ContainerConfinement.normalizedPathInArchive(
                pathInArchive ?? url.lastPathComponent,
                extensionName: confinement.extensionName)
            enterEngine(watchdog)
            defer { leaveEngine(watchdog) }
            var item = PackSource(path: source, archivePath: name)
            // The host's own folder is not the app's data: appended alone it is refused, and
            // with the whole container it is left out (it held the source's import status).
            item.skipping = [confinement.hostDirectoryPath]
            do {
                try await builder.append(item)
            } catch let error as ArchiveError where error.code == .invalidArchivePath {
                // A name the archive cannot take (taken, under a file, a component longer than a
                // file name): the extension's to change, said as its own error, as the host's
                // other refusals of a `pathInArchive` are. Nothing of the item was stored.
                throw AppMigrationError(
                    .invalidPathInArchive, "path in archive '\(error.member ?? name)': \(error.message)",
                    extensionName: confinement.extensionName, path: source, underlying: error)
            } catch let error as ArchiveError {
                // The engine's errors are of a module that code written for AppMigrationKit
                // cannot name (`catch let e as ArchiveError` did not compile there): said as the
                // host's, as an extension process receives them.
                let message =
                    await builder.isFinished
                    ? "appendItem(at:pathInArchive:) was called after exportResources(to:request:) returned: the archive is "
                        + "already finished" : error.description
                throw AppMigrationError(
                    .itemUnreadable, message, extensionName: confinement.extensionName, path: source, underlying: error)
            }
        case .host(let send):
            // The host resolves against its own working directory: make the path absolute here,
            // where a relative one means the extension's (the container).
            try await send(url.absoluteURL.path(percentEncoded: false), pathInArchive ?? url.lastPathComponent)
        }
    }

    /// A FIFO, a socket or a device appended by itself: the engine skips such files with a
    /// warning in a log (a folder's, as tar does), and an `appendItem` of one returned normally
    /// with nothing stored, which neither the extension nor its test could see.
    static func refuseSpecialFile(_ path: String, extensionName: String?) throws {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }  // missing: the engine names it
        let kind: String
        switch info.st_mode & S_IFMT {
        case S_IFIFO: kind = "a FIFO"
        case S_IFSOCK: kind = "a socket"
        case S_IFCHR: kind = "a character device"
        case S_IFBLK: kind = "a block device"
        default: return
        }
        throw AppMigrationError(
            .itemUnreadable,
            "it is \(kind): only files, folders and symbolic links are exported (in a folder, such files are skipped)",
            extensionName: extensionName, path: path)
    }

    // The extension's stage is idle while the engine works for it: the engine's own stages beat
    // for their progress, and a wait for a free compressor is backpressure, not a stall.
    private func enterEngine(_ watchdog: Watchdog?) {
        let first = appendsInFlight.withLock { count in
            count += 1
            return count == 1
        }
        if first { watchdog?.end(PipelineStage.extensionCode) }
    }

    private func leaveEngine(_ watchdog: Watchdog?) {
        let last = appendsInFlight.withLock { count in
            count -= 1
            return count == 0
        }
        if last { watchdog?.begin(PipelineStage.extensionCode) }
    }
}
