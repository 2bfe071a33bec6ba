import Foundation
import Synchronization
import Tar

/// Streams the entries under one or more roots, lazily and in a deterministic order.
///
/// Each root comes first, then its contents depth-first, names sorted bytewise within a directory.
/// Only one directory's names are held at a time per level, never the whole tree. Symbolic links are
/// stored as links, never followed. Sockets, devices and FIFOs are skipped with a warning, since an
/// app's data never needs them and not every platform can recreate them.
///
/// The walk runs on a thread of its own in batches, so a slow disk never holds a thread of Swift's
/// cooperative pool, and each batch costs one hop instead of one per entry.
public struct DirectoryEnumerator: AsyncSequence, Sendable {
    /// What one step of the walk produced.
    public struct Batch: Sendable {
        /// The objects found, in walk order.
        public var entries: [EnumeratedEntry]
        /// What could not be read, when unreadable items are tolerated (``PackOptions/unreadable``).
        public var warnings: [PackWarning]
    }

    /// A sequence of batches, one per step of the walk.
    public typealias Element = Batch

    let sources: [PackSource]
    let unreadable: PackOptions.Tolerance
    let batchSize: Int
    let pool: WorkerThreadPool?
    let fileSystem: FileSystem
    let watchdog: Watchdog?
    /// Entries left out, and folders not entered (``PackExclusion``).
    var exclusion = PackExclusion()
    /// Read each entry's extended attributes into it.
    var readsExtendedAttributes = false
    /// Read each file's and folder's ACLs into it.
    var readsAccessControlLists = false
    /// The order of the names within each folder; bytewise by default, as documented above.
    var order = WalkOrder.name

    /// - Parameters:
    ///   - sources: the roots, each with its archive path.
    ///   - unreadable: `.fail` throws for an entry that cannot be read; `.warn` skips it.
    ///   - batchSize: entries per step.
    public init(sources: [PackSource], unreadable: PackOptions.Tolerance = .fail, batchSize: Int = 256) {
        self.init(sources: sources, unreadable: unreadable, batchSize: batchSize, pool: nil, fileSystem: .system, watchdog: nil)
    }

    init(
        sources: [PackSource], unreadable: PackOptions.Tolerance, batchSize: Int, pool: WorkerThreadPool?,
        fileSystem: FileSystem, watchdog: Watchdog?
    ) {
        self.sources = sources
        self.unreadable = unreadable
        self.batchSize = Swift.max(1, batchSize)
        self.pool = pool
        self.fileSystem = fileSystem
        self.watchdog = watchdog
    }

    /// An iterator that walks the sources from the start.
    public func makeAsyncIterator() -> Iterator {
        Iterator(
            walker: DirectoryWalker(
                sources: sources, unreadable: unreadable, fileSystem: fileSystem, exclusion: exclusion,
                readsExtendedAttributes: readsExtendedAttributes, readsAccessControlLists: readsAccessControlLists, order: order),
            batchSize: batchSize, pool: pool, watchdog: watchdog)
    }

    /// Walks on a thread of its own, one batch per `next()`.
    public struct Iterator: AsyncIteratorProtocol {
        let walker: DirectoryWalker
        let batchSize: Int
        let pool: WorkerThreadPool
        /// The pool this iterator made, shut down when the last copy of the iterator goes away:
        /// a loop that breaks early never calls `next()` again, and its thread must not outlive it.
        let ownedPool: PoolOwner?
        let watchdog: Watchdog?
        var finished = false

        init(walker: DirectoryWalker, batchSize: Int, pool: WorkerThreadPool?, watchdog: Watchdog?) {
            self.watchdog = watchdog
            self.walker = walker
            self.batchSize = batchSize
            if let pool {
                self.pool = pool
                self.ownedPool = nil
            } else {
                let owner = PoolOwner(WorkerThreadPool(threads: 1, name: "amk-enumerate"))
                self.pool = owner.pool
                self.ownedPool = owner
            }
        }

        /// The next batch, or nil when the walk is done.
        ///
        /// - Throws: `ArchiveError` for an unreadable item when they are not tolerated,
        ///   `CancellationError` when cancelled.
        public mutating func next() async throws -> Batch? {
            if finished { return nil }
            let walker = self.walker
            let size = batchSize
            let watchdog = self.watchdog
            do {
                // The walk holds no resource the caller shares, so a stuck listing can be left behind.
                let batch = try await pool.run(abandonOnCancel: true) { flag in
                    let job = watchdog?.begin(.enumerate, job: "listing")
                    defer { if let job { watchdog?.end(job) } }
                    return try walker.nextBatch(max: size, cancellation: flag)
                }
                if batch == nil { finish() }
                return batch
            } catch {
                finish()
                throw error
            }
        }

        private mutating func finish() {
            finished = true
            ownedPool?.pool.shutdown()
        }
    }
}

/// Shuts its pool down when released.
final class PoolOwner: Sendable {
    let pool: WorkerThreadPool

    init(_ pool: WorkerThreadPool) { self.pool = pool }

    deinit { pool.shutdown() }
}

/// The state of a depth-first walk. A Mutex guards it, since successive batches run as separate
/// jobs on the pool (one at a time, but the compiler cannot know that).
final class DirectoryWalker: Sendable {
    private struct Frame {
        var sourcePath: String
        var archivePath: String
        var names: [String]
        var next = 0
        /// The file system of the root this folder is under (for ``PackExclusion/oneFileSystem``).
        var device: UInt64
    }

    private struct State {
        var pendingRoots: [PackSource]
        var stack: [Frame] = []
    }

    private let state: Mutex<State>
    private let unreadable: PackOptions.Tolerance
    private let fileSystem: FileSystem
    private let exclusion: PackExclusion
    private let readsExtendedAttributes: Bool
    private let readsAccessControlLists: Bool
    private let order: WalkOrder
    /// Source paths not stored (``PackSource/skipping``), compared as bytes.
    private let skipped: Set<ExactName>

    init(
        sources: [PackSource], unreadable: PackOptions.Tolerance, fileSystem: FileSystem, exclusion: PackExclusion = PackExclusion(),
        readsExtendedAttributes: Bool = false, readsAccessControlLists: Bool = false, order: WalkOrder = .name
    ) {
        self.readsExtendedAttributes = readsExtendedAttributes
        self.readsAccessControlLists = readsAccessControlLists
        self.order = order
        self.skipped = Set(sources.flatMap(\.skipping).map(ExactName.init))
        self.state = Mutex(State(pendingRoots: sources.reversed()))
        self.unreadable = unreadable
        self.fileSystem = fileSystem
        self.exclusion = exclusion
    }

    func nextBatch(max: Int, cancellation: CancellationFlag) throws -> DirectoryEnumerator.Batch? {
        try state.withLock { state -> DirectoryEnumerator.Batch? in
            var entries: [EnumeratedEntry] = []
            var warnings: [PackWarning] = []
            while entries.count < max {
                if cancellation.isCancelled { throw CancellationError() }
                let sourcePath: String
                let archivePath: String
                let isRoot: Bool
                var rootDevice: UInt64?
                if var top = state.stack.popLast() {
                    if top.next == top.names.count { continue }
                    let name = top.names[top.next]
                    top.next += 1
                    sourcePath = top.sourcePath == "/" ? "/" + name : top.sourcePath + "/" + name
                    archivePath = top.archivePath + "/" + name
                    state.stack.append(top)
                    isRoot = false
                    rootDevice = top.device
                } else if let root = state.pendingRoots.popLast() {
                    sourcePath = root.path
                    archivePath = try PackSource.normalizedArchivePath(root.archivePath)
                    isRoot = true
                } else {
                    break
                }
                if exclusion.excludes(archivePath: archivePath) { continue }
                if !isRoot, !skipped.isEmpty, skipped.contains(ExactName(sourcePath)) { continue }
                do {
                    guard let entry = try describe(sourcePath: sourcePath, archivePath: archivePath, warnings: &warnings) else {
                        continue
                    }
                    // A mount point under the root is stored, its contents are not (tar's rule).
                    let otherFileSystem = exclusion.oneFileSystem && rootDevice.map { $0 != entry.device } == true
                    if entry.kind == .directory && !otherFileSystem {
                        var names = try fileSystem.listDirectory(sourcePath)
                        order.arrange(&names)
                        state.stack.append(
                            Frame(
                                sourcePath: sourcePath, archivePath: archivePath, names: names,
                                device: rootDevice ?? entry.device))
                    }
                    entries.append(entry)
                } catch let error as ArchiveError {
                    // A file removed between listing and stat is not an error of the archive: tar
                    // reports it and carries on; a root that does not exist is the caller's error.
                    if !isRoot, case .io(let code) = error.code, code == ENOENT {
                        warnings.append(PackWarning(path: sourcePath, message: "removed before it could be read"))
                        continue
                    }
                    guard unreadable == .warn, !isRoot || error.code != .io(errno: ENOENT) else { throw error }
                    warnings.append(PackWarning(path: sourcePath, message: "skipped: \(error.message)"))
                }
            }
            if entries.isEmpty && warnings.isEmpty { return nil }
            return DirectoryEnumerator.Batch(entries: entries, warnings: warnings)
        }
    }

    private func describe(sourcePath: String, archivePath: String, warnings: inout [PackWarning]) throws -> EnumeratedEntry? {
        let info = try fileSystem.lstat(sourcePath)
        let kind: TarEntryKind
        var linkTarget: String?
        switch info.st_mode & S_IFMT {
        case S_IFREG: kind = .regular
        case S_IFDIR: kind = .directory
        case S_IFLNK:
            kind = .symbolicLink
            linkTarget = RawName.decode(try fileSystem.readlink(sourcePath))
        case S_IFSOCK:
            warnings.append(PackWarning(path: sourcePath, message: "skipped: sockets cannot be archived"))
            return nil
        case S_IFIFO:
            warnings.append(PackWarning(path: sourcePath, message: "skipped: FIFOs are not archived"))
            return nil
        case S_IFCHR, S_IFBLK:
            warnings.append(PackWarning(path: sourcePath, message: "skipped: device files are not archived"))
            return nil
        default:
            warnings.append(PackWarning(path: sourcePath, message: "skipped: unknown file type"))
            return nil
        }
        var entry = EnumeratedEntry(
            sourcePath: sourcePath,
            archivePath: archivePath,
            kind: kind,
            size: kind == .regular ? UInt64(info.st_size) : 0,
            mode: UInt32(info.st_mode) & 0o7777,
            uid: UInt64(info.st_uid),
            gid: UInt64(info.st_gid),
            mtime: Platform.modificationTime(info),
            linkTarget: linkTarget,
            device: UInt64(info.st_dev),
            inode: UInt64(info.st_ino),
            linkCount: UInt64(info.st_nlink)
        )
        if readsExtendedAttributes { entry.extendedAttributeList = try ExtendedAttributes.read(path: sourcePath) }
        if readsAccessControlLists && (kind == .regular || kind == .directory) {
            entry.accessACL = try Self.acl(PosixACL.accessAttribute, of: sourcePath)
            if kind == .directory { entry.defaultACL = try Self.acl(PosixACL.defaultAttribute, of: sourcePath) }
        }
        return entry
    }

    /// The text of `path`'s ACL in the attribute `name`, nil when it has none or one that says no
    /// more than the mode. An attribute the kernel would not have written is an error naming it.
    private static func acl(_ name: String, of path: String) throws(ArchiveError) -> String? {
        guard let value = try ExtendedAttributes.value(of: name, path: path) else { return nil }
        let acl: PosixACL
        do {
            acl = try PosixACL(attributeValue: value)
        } catch {
            throw ArchiveError(.io(errno: EINVAL), "\(name): \(error)", path: path)
        }
        guard name == PosixACL.defaultAttribute || !acl.isMinimal else { return nil }
        return acl.text(
            userName: { OwnerNames.user(UInt64($0)) }, groupName: { OwnerNames.group(UInt64($0)) })
    }
}
