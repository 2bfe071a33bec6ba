import AsyncAlgorithms
import Foundation
import Logging
import Tar
import XZ

/// Adds files and directory trees to an archive being packed.
///
/// Get one from ``ArchivePacker/withBuilder(to:options:_:)``. Each ``append(_:)`` walks its source,
/// serialises it into the tar stream and hands full chunks to the compressors; it suspends while
/// the compressors are busy (backpressure), so memory stays bounded however much is appended.
/// Appends from several tasks are taken one at a time, in the order they arrive.
public actor ArchiveBuilder {
    /// Files up to this size are read whole, many per thread hop.
    static let smallFileLimit: UInt64 = 256 * 1024
    /// A batch of small files read in one hop holds at most this many bytes.
    static let smallBatchBytes: UInt64 = 1 << 20
    /// Larger files are read in slices of this size.
    static let sliceSize = 1 << 20

    private let options: PackOptions
    private let io: WorkerThreadPool
    /// The options' file system, confined to the source being appended (see
    /// ``confined(_:to:)``); appends run one at a time, so one value at a time.
    private var fileSystem: FileSystem
    private let channel: AsyncChannel<Chunk>
    /// Advances ``PackOptions/progress``, if the caller gave one.
    private let report: ProgressReport?
    private var serializer: TarSerializer
    private(set) var warnings: [PackWarning] = []
    private var closed = false
    private var failure: (any Error)?
    private var appending = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    /// The arrays of chunks (given back by the pipeline once compressed) and of file reads.
    private let buffers: ByteArrayPool?
    private let reads = ByteArrayPool(limit: 2)

    /// The file the archive replaces, by device and inode, when it is in what is packed: it is not
    /// stored (tar skips its own archive so; the new one does not exist yet, but the old one, a
    /// stale copy of the same data, would go into the new).
    private let ownArchive: (device: UInt64, inode: UInt64)?

    init(
        options: PackOptions, io: WorkerThreadPool, channel: AsyncChannel<Chunk>, metadata: [String: String],
        report: ProgressReport?, buffers: ByteArrayPool? = nil, ownArchive: (device: UInt64, inode: UInt64)? = nil
    ) throws {
        self.ownArchive = ownArchive
        self.buffers = buffers
        self.options = options
        self.report = report
        self.io = io
        self.fileSystem = options.fileSystem
        self.channel = channel
        var serializer = TarSerializer(
            chunkSize: options.chunkSize, workers: options.compressible ? options.workers : 1, buffers: buffers)
        var ready: [Chunk] = []
        try serializer.appendGlobalHeader(metadata, into: &ready)
        precondition(ready.isEmpty, "a global header never fills a chunk")
        self.serializer = serializer
    }

    /// Adds a file, or a directory and everything under it, at `source.archivePath`.
    ///
    /// Throws if the path is unusable or already in the archive, if something cannot be read
    /// (unless the options say to warn), or `CancellationError` when the pack is cancelled, also
    /// when it is because compressing or writing failed (the pack then throws that failure). After
    /// a failure the builder refuses further appends (the tar stream may end mid-member), unless
    /// nothing of the source was stored: a refused name or a missing file leaves the archive as
    /// it was, and the next append goes on.
    public func append(_ source: PackSource) async throws {
        await lock()
        defer { unlock() }
        if let failure { throw failure }
        guard !closed else {
            throw ArchiveError(.invalidOptions, "the archive is already finished", path: source.path)
        }
        let before = (members: serializer.memberCount, position: serializer.position)
        do {
            try await refuseTakenNames(source)
            try await appendLocked(source)
        } catch let error as ArchiveError where (serializer.memberCount, serializer.position) == before {
            // Refused before any of it was stored (a name already in the archive, a path too
            // long, a file that cannot be opened): the archive is as it was, and later appends
            // are sound. A caught duplicate once failed every append after it, and the export.
            throw error
        } catch {
            failure = error
            throw error
        }
    }

    /// Whether ``close()`` has been called: the archive takes no more.
    public var isFinished: Bool { closed }

    /// Refuses a folder one of whose names is already in the archive before any of it is
    /// stored: found as it was stored, the folder's first members were in the archive already,
    /// so the refusal ended the archive (every later append failed with it, naming the next
    /// file, and so did the export), though an extension may catch a refused name and go on.
    /// Only a folder under whose name something is stored already is walked twice (its names
    /// only, the first time).
    private func refuseTakenNames(_ source: PackSource) async throws {
        let name = UTF8Bytes.droppingTrailingSlash(source.archivePath)
        guard !name.isEmpty, serializer.holdsMembers(under: name) else { return }
        var names = DirectoryEnumerator(
            sources: [source], unreadable: options.unreadable, batchSize: 256,
            pool: io, fileSystem: Self.confined(options.fileSystem, to: source.path), watchdog: options.watchdog)
        names.exclusion = options.exclusion
        for try await batch in names {
            for entry in batch.entries {
                try refuseTaken(entry.archivePath, kind: entry.kind, source: entry.sourcePath)
            }
        }
    }

    /// Refuses a member at `name` (of `kind`, read from `source`) that is already in the archive,
    /// or that no system could extract beside what is (``TarSerializer/conflict(for:kind:)``).
    private func refuseTaken(_ name: String, kind: TarEntryKind, source: String) throws(ArchiveError) {
        if serializer.contains(archivePath: name) {
            throw ArchiveError(.invalidArchivePath, "'\(name)' is already in the archive", path: source, member: name)
        }
        if let conflict = serializer.conflict(for: name, kind: kind) {
            throw ArchiveError(.invalidArchivePath, conflict, path: source, member: name)
        }
    }

    /// Adds several sources in order.
    public func append(contentsOf sources: [PackSource]) async throws {
        for source in sources { try await append(source) }
    }

    /// The members stored so far.
    public var entryCount: Int { serializer.memberCount }

    private func appendLocked(_ source: PackSource) async throws {
        // The system reads a path up to its first NUL: `Documents/..\0` would walk `Documents/..`,
        // the parent, under a name that is not `..`, each of its folders again inside itself,
        // without end.
        guard !UTF8Bytes.contains(0, in: source.path) else {
            throw ArchiveError(
                .io(errno: EINVAL), "the path holds a NUL byte: no file is named so, and the system would read another name",
                path: source.path)
        }
        fileSystem = Self.confined(options.fileSystem, to: source.path)
        var enumerator = DirectoryEnumerator(
            sources: [source], unreadable: options.unreadable, batchSize: 256,
            pool: io, fileSystem: fileSystem, watchdog: options.watchdog)
        enumerator.exclusion = options.exclusion
        enumerator.readsExtendedAttributes = options.storeExtendedAttributes
        enumerator.readsAccessControlLists = options.storeAccessControlLists
        enumerator.order = options.order
        for try await batch in enumerator {
            for warning in batch.warnings { record(warning) }
            var index = 0
            var entries = batch.entries
            if let own = ownArchive,
                let at = entries.firstIndex(where: { $0.kind == .regular && $0.device == own.device && $0.inode == own.inode })
            {
                record(PackWarning(path: entries[at].sourcePath, message: "skipped: it is the archive being written or replaced"))
                entries.remove(at: at)
            }
            while index < entries.count {
                try Task.checkCancellation()
                let entry = entries[index]
                if isSmallFile(entry) {
                    var run = [entry]
                    var total = entry.size
                    var next = index + 1
                    while next < entries.count, isSmallFile(entries[next]), total + entries[next].size <= Self.smallBatchBytes {
                        total += entries[next].size
                        run.append(entries[next])
                        next += 1
                    }
                    let fileSystem = self.fileSystem
                    let paths = run.map(\.sourcePath)
                    let watchdog = options.watchdog
                    // Each read opens and closes its own files, so a stuck one can be left behind.
                    // Each file is a job of its own; storing the contents (which may wait for a
                    // free compressor) is outside them.
                    let contents = try await io.run(abandonOnCancel: true) { flag in
                        try paths.map { path -> Result<FileContent, ArchiveError> in
                            if flag.isCancelled { throw CancellationError() }
                            let job = watchdog?.begin(.read, job: path)
                            defer { if let job { watchdog?.end(job) } }
                            do { return .success(try FileContent.read(path: path, fileSystem: fileSystem)) } catch let error as ArchiveError
                            { return .failure(error) }
                        }
                    }
                    for (entry, content) in zip(run, contents) {
                        try await storeSmall(entry, content)
                    }
                    index = next
                } else {
                    try await store(entry)
                    index += 1
                }
            }
        }
    }

    /// `fileSystem`, with every file opened and folder listed checked to lie in `source` (its
    /// real path): the walk goes by path, and a folder swapped for a link to `/` while the pack
    /// ran once got the machine's files stored under the tree's names. GNU tar walks by
    /// descriptor; here the kernel's name for each descriptor is checked instead
    /// (``FileSystem/confined(to:)``). A source that is a link is stored as a link, and reads
    /// nothing; without `/proc` the check cannot be made, and is not.
    static func confined(_ fileSystem: FileSystem, to source: String) -> FileSystem {
        guard FileSystem.canNameDescriptors else { return fileSystem }
        // Names are bytes (RawName): the C string is the source's bytes, and so is the answer.
        let resolved: [UInt8]? = (RawName.encode(source) + [0]).withUnsafeBufferPointer { name in
            name.withMemoryRebound(to: CChar.self) { name in
                guard let real = realpath(name.baseAddress!, nil) else { return nil }
                defer { free(real) }
                return Array(UnsafeRawBufferPointer(start: real, count: strlen(real)))
            }
        }
        guard let resolved else { return fileSystem }
        return fileSystem.confined(to: RawName.decode(resolved))
    }

    private func isSmallFile(_ entry: EnumeratedEntry) -> Bool {
        entry.kind == .regular && entry.size <= Self.smallFileLimit && hardLinkTarget(of: entry) == nil
    }

    private func hardLinkTarget(of entry: EnumeratedEntry) -> String? {
        guard entry.linkCount > 1 else { return nil }
        return serializer.hardLinkTarget(for: .init(device: entry.device, inode: entry.inode))
    }

    private func record(_ warning: PackWarning) {
        warnings.append(warning)
        // Names come from the disk (or an archive) and logs are read on terminals: escaped.
        options.logger.warning("\(TerminalSafe.message(warning.message))", metadata: ["path": "\(TerminalSafe.name(warning.path))"])
        options.onEvent?(.warning(warning))
    }

    private func header(
        for entry: EnumeratedEntry, kind: TarEntryKind, size: UInt64 = 0, status: FileStatus? = nil,
        linkTarget: String? = nil
    ) -> TarHeader {
        let uid = status?.uid ?? entry.uid
        let gid = status?.gid ?? entry.gid
        var header = TarHeader(
            path: entry.archivePath, kind: kind, size: size, mode: status?.mode ?? entry.mode, uid: uid, gid: gid,
            mtime: status?.mtime ?? entry.mtime, linkTarget: linkTarget,
            userName: OwnerNames.user(uid), groupName: OwnerNames.group(gid))
        header.extendedAttributeList = entry.extendedAttributeList
        header.accessACL = entry.accessACL
        header.defaultACL = entry.defaultACL
        return header
    }

    private func begin(_ header: TarHeader, source: String, incompressible: Bool = false) async throws {
        let name = header.path
        // A name a reader would refuse (amk's, and so every extraction of this archive) is refused
        // here, before an archive that cannot be read back is written.
        let longest = TarParser.Limits().maxPathLength
        for (what, value) in [("path", name), ("link target", header.linkTarget ?? "")] where value.utf8.count > longest {
            throw ArchiveError(
                .invalidArchivePath, "\(what) of \(value.utf8.count) bytes is longer than the \(longest) bytes a reader accepts",
                path: source)
        }
        try refuseTaken(name, kind: header.kind, source: source)
        var ready: [Chunk] = []
        do {
            try serializer.beginMember(header, incompressible: incompressible, into: &ready)
        } catch var error as ArchiveError where error.path == nil {
            error.path = source
            throw error
        }
        try await send(ready)
    }

    private func end(checksum: UInt64, path: String, bytes: UInt64) async throws {
        var ready: [Chunk] = []
        serializer.endMember(checksum: checksum, into: &ready)
        try await send(ready)
        options.onEvent?(.entryStored(path: path, bytes: bytes))
        report?.stored(bytes)
    }

    private func append(_ bytes: [UInt8]) async throws {
        var ready: [Chunk] = []
        serializer.append(bytes, into: &ready)
        try await send(ready)
    }

    private func send(_ chunks: [Chunk]) async throws {
        for chunk in chunks {
            options.onEvent?(.chunkSerialized(sequence: chunk.sequence, tarBytes: serializer.position))
            await channel.send(chunk)
            // A send returns unsent when the task is cancelled: by the caller, or by the pack when
            // compressing or writing failed.
            try Task.checkCancellation()
        }
    }

    /// Stores a directory, a symlink, a hard link to an inode already stored, or a large file.
    private func store(_ entry: EnumeratedEntry) async throws {
        switch entry.kind {
        case .directory:
            try await begin(header(for: entry, kind: entry.kind, linkTarget: entry.linkTarget), source: entry.sourcePath)
            // The member's name, a folder's with its `/`, as `tar -cv` and `amk list` show it.
            try await end(
                checksum: 0, path: UTF8Bytes.endsWithSlash(entry.archivePath) ? entry.archivePath : entry.archivePath + "/", bytes: 0)
        case .symbolicLink:
            // A symbolic link can have several names too (link(2) does not follow it): stored
            // once and then as hard links, as GNU tar and bsdtar store it, so that extraction
            // gives back one inode rather than two links.
            if let target = hardLinkTarget(of: entry) {
                try await begin(header(for: entry, kind: .hardLink, linkTarget: target), source: entry.sourcePath)
            } else {
                rememberIfLinked(entry)
                try await begin(header(for: entry, kind: entry.kind, linkTarget: entry.linkTarget), source: entry.sourcePath)
            }
            try await end(checksum: 0, path: entry.archivePath, bytes: 0)
        case .regular:
            if let target = hardLinkTarget(of: entry) {
                try await begin(header(for: entry, kind: .hardLink, linkTarget: target), source: entry.sourcePath)
                try await end(checksum: 0, path: entry.archivePath, bytes: 0)
            } else {
                try await storeLargeFile(entry)
            }
        default:
            record(PackWarning(path: entry.sourcePath, message: "skipped: not a file, directory or link"))
        }
    }

    private func storeSmall(_ entry: EnumeratedEntry, _ content: Result<FileContent, ArchiveError>) async throws {
        if let target = hardLinkTarget(of: entry) {
            try await begin(header(for: entry, kind: .hardLink, linkTarget: target), source: entry.sourcePath)
            try await end(checksum: 0, path: entry.archivePath, bytes: 0)
            return
        }
        let file: FileContent
        switch content {
        case .success(let value): file = value
        case .failure(let error):
            try tolerateUnreadable(error, path: entry.sourcePath)
            return
        }
        var bytes = file.bytes
        var checksum = file.checksum
        let size = file.status.size
        if UInt64(bytes.count) < size {
            try tolerateChange(
                "shrank from \(size) to \(bytes.count) bytes while it was read", stored: "the rest is stored as zeros",
                path: entry.sourcePath)
            bytes.append(contentsOf: repeatElement(0, count: Int(size) - bytes.count))
            checksum = CRC.crc64(bytes)
        }
        if file.grew {
            try tolerateChange("grew while it was read", stored: "only the first \(size) bytes are stored", path: entry.sourcePath)
        }
        if file.modified {
            try tolerateChange(Self.modified, stored: Self.storedAsRead, path: entry.sourcePath)
        }
        rememberIfLinked(entry)
        try await begin(
            header(for: entry, kind: .regular, size: size, status: file.status), source: entry.sourcePath,
            incompressible: goesApart(entry, size: size, prefix: bytes.prefix(8)))
        if isCode(bytes) { serializer.markContentAsCode() }
        try await append(bytes)
        try await end(checksum: checksum, path: entry.archivePath, bytes: size)
    }

    /// Whether a regular file goes apart, into stored blocks (``FileClass``). Never a file with
    /// several links: a hard link to it could then come before it in the stream.
    private func goesApart(_ entry: EnumeratedEntry, size: UInt64, prefix: ArraySlice<UInt8>?) -> Bool {
        options.gathersIncompressibleApart && options.compressible && entry.linkCount <= 1
            && FileClass.isIncompressible(path: entry.sourcePath, size: size, prefix: prefix)
    }

    /// Whether a file starting with `bytes` goes through the x86 branch filter.
    private func isCode(_ bytes: [UInt8]) -> Bool {
        options.filtersExecutables && options.compressible && FileClass.isX86Code(bytes)
    }

    private func rememberIfLinked(_ entry: EnumeratedEntry) {
        if entry.linkCount > 1 {
            serializer.rememberHardLink(.init(device: entry.device, inode: entry.inode), path: entry.archivePath)
        }
    }

    private func tolerateUnreadable(_ error: ArchiveError, path: String) throws {
        // A file removed between the listing and its open is no longer there to store: left out,
        // whatever the tolerance, as the walk leaves out one removed before its stat.
        if error.code == .io(errno: ENOENT) {
            record(PackWarning(path: path, message: "removed before it could be read"))
            return
        }
        // Replaced between the listing and its open: by a folder or a device (no longer a regular
        // file), by a link (which the open does not follow: ELOOP), or one of its folders by a
        // file (ENOTDIR). A change of the tree like a removal, which --allow-changes allows: the
        // pack failed, blaming a link loop or a missing folder.
        if error.code == .changedWhileReading || error.code == .io(errno: ELOOP) || error.code == .io(errno: ENOTDIR) {
            let change = "was replaced by something other than a file before it could be read"
            // Skipping unreadable files (--ignore-failed-read) skips it too, as it always did.
            if options.unreadable == .warn && options.changedWhileReading != .warn {
                record(PackWarning(path: path, message: "skipped: \(change)"))
                return
            }
            try tolerateChange(change, stored: "it is left out", path: path)
            return
        }
        guard options.unreadable == .warn else { throw error }
        record(PackWarning(path: path, message: "skipped: \(error.message)"))
    }

    /// A file changed while it was read: the pack fails, saying how to store such a file anyway,
    /// or (``PackOptions/changedWhileReading`` `.warn`) stores it as `stored` says, with a warning.
    private func tolerateChange(_ change: String, stored: String, path: String) throws {
        guard options.changedWhileReading == .warn else {
            throw ArchiveError(
                .changedWhileReading,
                "\(change); to store files in use as they are read, allow changes (amk pack --allow-changes, PackOptions.changedWhileReading)",
                path: path)
        }
        record(PackWarning(path: path, message: "\(change); \(stored)"))
    }

    /// A file written in place while it was read keeps its size, so only its modification time
    /// tells (as GNU tar's "file changed as we read it"): stored silently, it would be a mix of
    /// old and new bytes that the file never held.
    static let modified = "was modified while it was read"
    static let storedAsRead = "what was read is stored, which may mix its old and new content"

    private func storeLargeFile(_ entry: EnumeratedEntry) async throws {
        let fileSystem = self.fileSystem
        let path = entry.sourcePath
        let opened: (Int32, FileStatus)
        let watchdog = options.watchdog
        do {
            opened = try await io.run(abandonOnCancel: true, discard: { fd, _ in fileSystem.close(fd) }) { _ in
                let job = watchdog?.begin(.read, job: path)
                defer { if let job { watchdog?.end(job) } }
                let fd = try fileSystem.openForReading(path)
                do {
                    let status = FileStatus(try fileSystem.fstat(fd, path))
                    guard status.isRegular else {
                        throw ArchiveError(.changedWhileReading, "is no longer a regular file", path: path)
                    }
                    return (fd, status)
                } catch {
                    fileSystem.close(fd)
                    throw error
                }
            }
        } catch let error as ArchiveError {
            try tolerateUnreadable(error, path: path)
            return
        }
        let (rawDescriptor, status) = opened
        let descriptor = SharedDescriptor(rawDescriptor, close: fileSystem.close)
        defer { descriptor.close() }
        rememberIfLinked(entry)
        try await begin(
            header(for: entry, kind: .regular, size: status.size, status: status), source: path,
            incompressible: goesApart(entry, size: status.size, prefix: nil))
        var remaining = status.size
        var checksum: UInt64 = 0
        let slice = Self.sliceSize
        let sparse = status.mayHaveHoles
        while remaining > 0 {
            try Task.checkCancellation()
            let want = Int(min(remaining, UInt64(slice)))
            let previous = checksum
            let offset = status.size - remaining
            // The job is the read alone: `append` below may wait for a free compressor, and
            // backpressure is not a stall of the read stage.
            let reads = self.reads
            let (bytes, crc) = try await io.run(abandonOnCancel: true) { _ -> ([UInt8], UInt64) in
                let job = watchdog?.begin(.read, job: "\(path) at \(offset)")
                defer { if let job { watchdog?.end(job) } }
                var buffer = reads.take(minimumCapacity: want)
                ByteArrayPool.resize(&buffer, to: want)
                // A hole is not read: its zeros are written in place and checksummed by their
                // count (a disk image of 2 GiB holding 1 MB was read and summed byte by byte).
                let hole = sparse ? try descriptor.use { fd in try fileSystem.skipHole(fd, want, path) } : 0
                if hole > 0 {
                    buffer.removeLast(want - hole)
                    buffer.withUnsafeMutableBytes { _ = $0.initializeMemory(as: UInt8.self, repeating: 0) }
                    return (buffer, CRC.crc64(zeros: UInt64(hole), previous: previous))
                }
                let count = try descriptor.use { fd in try buffer.withUnsafeMutableBytes { try fileSystem.read(fd, $0, path) } }
                buffer.removeLast(want - count)
                return (buffer, CRC.crc64(buffer, previous: previous))
            }
            if bytes.isEmpty {
                // What was read is not what the file holds now: cut to nothing after 4 MiB were
                // read, it was said to have "shrunk to 4194304 bytes".
                let now = (try? descriptor.use { fd in try fileSystem.fstat(fd, path) })?.st_size
                try tolerateChange(
                    "shrank while it was read: it had \(status.size) bytes, \(status.size - remaining) were read"
                        + (now.map { " before it ended; it now has \($0)" } ?? " before it ended"),
                    stored: "the rest is stored as zeros", path: path)
                var zeros = [UInt8](repeating: 0, count: 0)
                while remaining > 0 {
                    let n = Int(min(remaining, UInt64(slice)))
                    zeros = [UInt8](repeating: 0, count: n)
                    checksum = CRC.crc64(zeros, previous: checksum)
                    try await append(zeros)
                    remaining -= UInt64(n)
                }
                break
            }
            checksum = crc
            if offset == 0, isCode(bytes) { serializer.markContentAsCode() }
            try await append(bytes)
            remaining -= UInt64(bytes.count)
            reads.recycle(bytes)
        }
        let (grew, modified) = try await io.run(abandonOnCancel: true) { _ -> (Bool, Bool) in
            let job = watchdog?.begin(.read, job: path)
            defer { if let job { watchdog?.end(job) } }
            var probe = [UInt8](repeating: 0, count: 1)
            return try descriptor.use { fd in
                let grew = try probe.withUnsafeMutableBytes { try fileSystem.read(fd, $0, path) } > 0
                return (grew, FileStatus(try fileSystem.fstat(fd, path)).changed(since: status))
            }
        }
        if grew {
            try tolerateChange("grew while it was read", stored: "only the first \(status.size) bytes are stored", path: path)
        } else if modified {
            try tolerateChange(Self.modified, stored: Self.storedAsRead, path: path)
        }
        try await end(checksum: checksum, path: entry.archivePath, bytes: status.size)
    }

    /// What the index blocks need once the tar stream has ended.
    typealias Closing = (recorded: TarSerializer.Recorded, fileBytes: UInt64)

    /// Ends the tar stream and closes the channel; returns what the index blocks need.
    func close() async throws -> Closing {
        await lock()
        defer { unlock() }
        if let failure { throw failure }
        closed = true
        var ready: [Chunk] = []
        let recorded = serializer.finish(into: &ready)
        try await send(ready)
        channel.finish()
        return (recorded, serializer.fileBytes)
    }

    // Appends run one at a time: each awaits I/O and channel sends, and the actor would otherwise
    // interleave two appends' bytes in one tar stream.
    private func lock() async {
        if appending {
            await withCheckedContinuation { waiters.append($0) }
        } else {
            appending = true
        }
    }

    private func unlock() {
        if waiters.isEmpty {
            appending = false
        } else {
            waiters.removeFirst().resume()
        }
    }
}
