import Tar
import XZ

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The single owner of an archive's output: writes the stream header, the data blocks in sequence
/// order whatever order they arrive in, the two index blocks, the xz Index and the footer.
///
/// A file destination is written atomically. On Linux the data goes to an unnamed `O_TMPFILE` in
/// the destination's directory, which is given a name only once it is complete and synced, so even
/// a killed process leaves nothing behind; where the file system refuses `O_TMPFILE` (and on other
/// systems), to a hidden temporary file beside the destination, created with `O_EXCL`. Then `rename(2)` puts it in place and the directory is synced. It never seeks, so
/// a pipe or a socket works as well as a file.
///
/// What the destination path names decides how, as with `tar -cf`: a symbolic link is followed
/// (its target is replaced, not the link); a device, a FIFO or a socket is written into as it is
/// (replacing `/dev/null` with a regular file would break the system); a file that is replaced
/// keeps its permissions, and as root its owner (a backup kept `0600` must not become readable by
/// all); a folder is refused.
actor ArchiveWriter {
    private let destination: ArchiveDestination
    private let io: WorkerThreadPool
    private var fd: Int32 = -1
    private var ownsDescriptor = false
    /// Whether the output is a pipe or a socket, whose reader may stop taking: written in waits
    /// for room that look at the cancellation (``SystemCall/writeAllWatching(_:_:path:isSocket:isCancelled:)``).
    private var waitsForRoom = false
    private var isSocket = false
    /// The named temporary file, when `O_TMPFILE` was not available.
    private var temporaryPath: String?
    /// The file the archive replaces once complete (the destination, its link followed), or nil
    /// when the destination is written into as it is (a device, a FIFO, a socket).
    private var finalPath: String?
    /// The regular file already at ``finalPath`` when the archive was opened, by device and inode:
    /// the packer leaves it out of what it packs, as tar leaves out its own archive.
    private(set) var replacing: (device: UInt64, inode: UInt64)?
    private var index = XZIndexBuilder()
    private var pending: [Int: EncodedBlock] = [:]
    private var nextSequence = 0
    private var finished = false
    private(set) var bytesWritten: UInt64 = 0
    private(set) var dataBlocks = 0
    private(set) var storedBlocks = 0
    /// Data blocks written through the x86 branch filter.
    private(set) var x86Blocks = 0
    private let onBlockWritten: (@Sendable (Int, UInt64) -> Void)?
    private let watchdog: Watchdog?

    init(
        destination: ArchiveDestination, io: WorkerThreadPool, watchdog: Watchdog? = nil,
        onBlockWritten: (@Sendable (Int, UInt64) -> Void)? = nil
    ) {
        self.destination = destination
        self.io = io
        self.watchdog = watchdog
        self.onBlockWritten = onBlockWritten
    }

    private var displayPath: String {
        switch destination {
        case .file(let path): return path
        case .fileDescriptor(let fd): return fd == STDOUT_FILENO ? "standard output" : "file descriptor \(fd)"
        }
    }

    /// Opens the output and writes the stream header.
    func open() async throws {
        switch destination {
        case .fileDescriptor(let descriptor):
            fd = descriptor
            // Standard output sent to a file (`amk pack d -o - > d/a.tar.xz`): that file is the
            // archive as it grows, and a pack that met it stored a piece of its own unfinished
            // output under its name, exit status 0, or failed on a file that "grew while read".
            var info = stat()
            if fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG {
                replacing = (UInt64(info.st_dev), UInt64(info.st_ino))
            }
        case .file(let path):
            let opened = try await io.run(
                abandonOnCancel: true,
                discard: { opened in
                    SystemCall.close(opened.fd)
                    if let temporary = opened.temporary { SystemCall.unlink(temporary) }
                }
            ) { _ in try ArchiveWriter.openDestination(path) }
            fd = opened.fd
            temporaryPath = opened.temporary
            finalPath = opened.final
            replacing = opened.replacing
            ownsDescriptor = true
        }
        var info = stat()
        if fstat(fd, &info) == 0 {
            isSocket = info.st_mode & S_IFMT == S_IFSOCK
            waitsForRoom = isSocket || info.st_mode & S_IFMT == S_IFIFO
        }
        try await write(StreamHeader.encode(check: .crc64))
    }

    /// Cut at the last byte `/` (a `/` followed by a combining mark is one `Character`).
    static func directoryAndName(of path: String) -> (directory: String, name: String) {
        guard let (directory, name) = PathBytes.splitAtLastSlash(path) else { return (".", path) }
        return (directory.isEmpty ? "/" : directory, name)
    }

    /// An opened destination: the descriptor written, its temporary name if it has one, and the
    /// path it is renamed to when complete (nil: written in place).
    struct Opened: Sendable {
        var fd: Int32
        var temporary: String?
        var final: String?
        /// The regular file the archive replaces, by device and inode, if one is there.
        var replacing: (device: UInt64, inode: UInt64)?
    }

    /// Opens what `path` names for writing the archive (see the type's discussion).
    static func openDestination(_ path: String) throws -> Opened {
        try SystemCall.refuseNUL(path)
        // What the kernel reaches first: `/dev/stdout`, `/dev/fd/1` and `>(cmd)` are links to a
        // pipe that no path names (`pipe:[2892327]`), which following them by hand cannot reach.
        var reached = stat()
        if SystemCall.reaching(path, { stat($0, &reached) }) == 0 {
            let kind = reached.st_mode & S_IFMT
            if kind != S_IFREG && kind != S_IFDIR {
                // A device, a FIFO, a pipe or a socket: written into, as `tar -cf` writes into it.
                let fd = try SystemCall.open(path, O_WRONLY)
                return Opened(fd: fd, temporary: nil, final: nil)
            }
        }
        let target = try followingLinks(path)
        var info = stat()
        let exists = SystemCall.reaching(target) { stat($0, &info) } == 0
        if exists {
            switch info.st_mode & S_IFMT {
            case S_IFREG:
                // The new archive is renamed over the old one, which asks only for the right to
                // write in its folder: a user could replace root's file in a folder open to all,
                // or their own read-only one. `tar -cf` opens the file to write into it, and
                // fails with EACCES: so does this.
                guard SystemCall.reaching(target, { faccessat(AT_FDCWD, $0, W_OK, AT_EACCESS) }) == 0 else {
                    throw ArchiveError(
                        .io(errno: EACCES), "the destination exists and this user may not write it (tar -cf refuses it alike)",
                        path: path)
                }
            case S_IFDIR:
                throw ArchiveError(.io(errno: EISDIR), "the destination is a folder, not an archive file", path: path)
            default:
                // A device, a FIFO or a socket: written into, as `tar -cf` writes into it.
                let fd = try SystemCall.open(target, O_WRONLY)
                return Opened(fd: fd, temporary: nil, final: nil)
            }
        }
        let (fd, temporary) = try createTemporary(for: target)
        if exists {
            // The replacement is the same file to whoever could read it: owner first (chown clears
            // the set-id bits), then the permissions.
            if geteuid() == 0 { _ = fchown(fd, info.st_uid, info.st_gid) }
            _ = fchmod(fd, info.st_mode & 0o7777)
        }
        return Opened(
            fd: fd, temporary: temporary, final: target,
            replacing: exists ? (UInt64(info.st_dev), UInt64(info.st_ino)) : nil)
    }

    /// `path` with a final symbolic link followed (up to 40 of them, as the kernel does); a link
    /// whose target does not exist yet names where the archive goes.
    static func followingLinks(_ path: String) throws -> String {
        var current = path
        for _ in 0..<40 {
            guard let info = try? SystemCall.lstat(current), info.st_mode & S_IFMT == S_IFLNK else { return current }
            let target = RawName.decode(try SystemCall.readlink(current))
            current = PathBytes.isAbsolute(target) ? target : directoryAndName(of: current).directory + "/" + target
        }
        throw ArchiveError(.io(errno: ELOOP), "too many symbolic links", path: path)
    }

    private static func createTemporary(for path: String) throws -> (Int32, String?) {
        let (directory, name) = directoryAndName(of: path)
        #if os(Linux)
            // O_TMPFILE is a composite macro Swift does not import; __O_TMPFILE is 020000000 on Linux.
            let tmpfile: Int32 = 0o20000000 | O_DIRECTORY
            let fd = SystemCall.retrying { Platform.open(directory, tmpfile | O_WRONLY | O_CLOEXEC, 0o644) }
            if fd >= 0 { return (fd, nil) }
            if errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL {
                throw SystemCall.error("create temporary file in '\(directory)'", path: path)
            }
        #endif
        for _ in 0..<16 {
            let candidate = "\(directory)/.\(name).amk-\(String(UInt64.random(in: 0...UInt64.max), radix: 36))"
            let fd = SystemCall.retrying { Platform.open(candidate, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644) }
            if fd >= 0 { return (fd, candidate) }
            if errno != EEXIST { throw SystemCall.error("create temporary file", path: candidate) }
        }
        throw ArchiveError(.io(errno: EEXIST), "could not create a unique temporary file", path: path)
    }

    /// The most one write call hands the kernel: a pipe's reader takes a slice at a time.
    static let writeSlice = 64 << 10

    private func write(_ bytes: [UInt8]) async throws {
        let fd = self.fd
        let path = displayPath
        let offset = bytesWritten
        let watchdog = self.watchdog
        let waitsForRoom = self.waitsForRoom
        let isSocket = self.isSocket
        try await io.run { cancellation in
            let job = watchdog?.begin(.write, job: "\(bytes.count) bytes at offset \(offset) of \(path)")
            defer { if let job { watchdog?.end(job) } }
            // In slices, each a sign of life: one write of a whole block into a pipe returns only
            // when a slow reader (`amk pack -o - | ssh ...`) has taken all of it, and a reader
            // steadily taking 640 KiB/s was called a stall after 2 s.
            try bytes.withUnsafeBytes { buffer in
                var done = 0
                while done < buffer.count {
                    let end = min(done + Self.writeSlice, buffer.count)
                    let slice = UnsafeRawBufferPointer(rebasing: buffer[done..<end])
                    if waitsForRoom {
                        try SystemCall.writeAllWatching(
                            fd, slice, path: path, isSocket: isSocket, isCancelled: { cancellation.isCancelled })
                    } else {
                        try SystemCall.writeAll(fd, slice, path: path)
                    }
                    done = end
                    if let job { watchdog?.beat(job) }
                }
            }
        }
        bytesWritten += UInt64(bytes.count)
    }

    /// Takes block `sequence`, writes every block that is now next in order, and returns how many
    /// blocks are still waiting for an earlier one.
    ///
    /// Calls may interleave at the write's suspension point; the block being written has already
    /// left `pending` and `nextSequence` moves only after its write, so a concurrent call finds
    /// nothing to write out of turn, and the call that wrote block n goes on to n + 1.
    func accept(sequence: Int, block: EncodedBlock) async throws -> Int {
        pending[sequence] = block
        while let next = pending.removeValue(forKey: nextSequence) {
            try await write(next.bytes)
            try index.append(unpaddedSize: next.unpaddedSize, uncompressedSize: next.uncompressedSize)
            dataBlocks += 1
            if next.isStored { storedBlocks += 1 }
            if next.branch == .x86 { x86Blocks += 1 }
            onBlockWritten?(nextSequence, bytesWritten)
            nextSequence += 1
        }
        return pending.count
    }

    /// Writes the index blocks, the xz Index and the footer, syncs, and puts the file in place.
    func finish(trailingBlocks: [EncodedBlock]) async throws {
        precondition(pending.isEmpty, "finish() with blocks still waiting for an earlier one")
        for block in trailingBlocks {
            try await write(block.bytes)
            try index.append(unpaddedSize: block.unpaddedSize, uncompressedSize: block.uncompressedSize)
        }
        let encodedIndex = index.encoded()
        try await write(encodedIndex)
        try await write(StreamFooter.encode(check: .crc64, indexSize: UInt64(encodedIndex.count)))
        guard case .file = destination, let path = finalPath else {
            finished = true
            closeDescriptor()
            return
        }
        let fd = self.fd
        let temporary = temporaryPath
        let watchdog = self.watchdog
        try await io.run { flag in
            try SystemCall.fsync(fd, path: path)
            // The point of no return. Cancelled before it, the archive is dropped; after it, the
            // archive is in place and the pack succeeds, so a caller never gets an error while a
            // complete archive appears at the destination.
            guard !flag.isCancelled, watchdog?.commit() ?? true else { throw CancellationError() }
            if let temporary {
                try SystemCall.rename(temporary, path)
            } else {
                try ArchiveWriter.linkAnonymous(fd: fd, to: path)
            }
            let (directory, _) = ArchiveWriter.directoryAndName(of: path)
            let dirfd = try SystemCall.open(directory, O_RDONLY | O_DIRECTORY)
            defer { SystemCall.close(dirfd) }
            try SystemCall.fsync(dirfd, path: directory)
        }
        temporaryPath = nil
        finished = true
        closeDescriptor()
    }

    /// Gives an `O_TMPFILE` a name: link it under a unique hidden name, then rename that over the
    /// destination (linkat cannot replace an existing file).
    private static func linkAnonymous(fd: Int32, to path: String) throws {
        let (directory, name) = directoryAndName(of: path)
        let source = "/proc/self/fd/\(fd)"
        for _ in 0..<16 {
            let candidate = "\(directory)/.\(name).amk-\(String(UInt64.random(in: 0...UInt64.max), radix: 36))"
            if linkat(AT_FDCWD, source, AT_FDCWD, candidate, AT_SYMLINK_FOLLOW) == 0 {
                do {
                    try SystemCall.rename(candidate, path)
                } catch {
                    SystemCall.unlink(candidate)
                    throw error
                }
                return
            }
            if errno != EEXIST { throw SystemCall.error("link the finished archive into place", path: path) }
        }
        throw ArchiveError(.io(errno: EEXIST), "could not name the finished archive", path: path)
    }

    /// Drops a half-written archive: closes and removes the temporary file. Never throws, so it can
    /// run on every failure path, cancellation included.
    func abort() {
        guard !finished else { return }
        finished = true
        if let temporaryPath { SystemCall.unlink(temporaryPath) }
        temporaryPath = nil
        closeDescriptor()
    }

    private func closeDescriptor() {
        if ownsDescriptor && fd >= 0 { SystemCall.close(fd) }
        fd = -1
    }
}
