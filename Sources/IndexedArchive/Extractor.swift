#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Tar

/// Writes members under a destination directory and nowhere else.
///
/// Paths are resolved one component at a time from a descriptor of the destination with
/// `openat(O_NOFOLLOW | O_DIRECTORY)`, so no symbolic link is ever followed, including one the
/// archive created a moment before; string prefixes are never trusted. Files are created with
/// `O_EXCL | O_NOFOLLOW` after removing what was there, so a link in the way is replaced, not
/// written through. Directory modes and times are applied at the end, after their contents.
final class Extractor {
    private let root: Int32
    private let rootPath: String
    private let options: ExtractOptions
    private let byteLimit: UInt64
    private let isRoot = geteuid() == 0
    private var current: (fd: Int32, parent: Int32, name: String, header: TarHeader)?
    private var directories: [(components: [String], header: TarHeader)] = []
    private(set) var entries = 0
    private(set) var bytes: UInt64 = 0
    private(set) var warnings: [String] = []

    init(destination: String, options: ExtractOptions, archiveSize: UInt64) throws(ArchiveError) {
        _ = mkdir(destination, 0o755)
        self.root = try SystemCall.open(destination, O_RDONLY | O_DIRECTORY)
        self.rootPath = destination
        self.options = options
        self.byteLimit = options.byteLimit(archiveSize: archiveSize)
    }

    deinit {
        abandonCurrent()
        SystemCall.close(root)
    }

    /// The path's components, or an error if it would leave the destination.
    func components(of path: String) throws(ArchiveError) -> [String] {
        var path = Substring(path)
        if path.hasPrefix("/") {
            guard options.allowAbsolutePaths else {
                throw ArchiveError(.unsafePath, "absolute path refused", member: String(path))
            }
            path = path.drop { $0 == "/" }
        }
        // The kernel reads a name up to its first NUL: a name holding one would be checked here
        // as one name and acted on as another, so it is refused whole.
        guard !path.utf8.contains(0) else {
            throw ArchiveError(.unsafePath, "path contains a NUL byte; refused", member: String(path))
        }
        var parts: [String] = []
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            if part == "." { continue }
            if part == ".." { throw ArchiveError(.unsafePath, "path with '..' refused", member: String(path)) }
            parts.append(String(part))
        }
        guard !parts.isEmpty else { throw ArchiveError(.unsafePath, "empty path refused", member: String(path)) }
        return parts
    }

    /// Whether a link at `linkComponents` pointing to `target` resolves inside the destination.
    /// Only targets of the form `../../a/b` qualify, climbing no higher than the root: a `..`
    /// after a name could climb out of a folder that is itself a link (`s/../..` with `s` a link
    /// to a deep folder), and judging that would mean resolving links. With every link of the
    /// tree held to this rule, resolution through links stays inside too: each link's parents are
    /// real folders (extraction never creates through a link), so by induction every hop lands
    /// inside.
    static func staysInside(target: String, linkComponents: [String]) -> Bool {
        guard !target.hasPrefix("/"), !target.isEmpty, !target.utf8.contains(0) else { return false }
        var climbs = 0
        var sawName = false
        for part in target.split(separator: "/", omittingEmptySubsequences: true) {
            switch part {
            case ".": continue
            case "..":
                guard !sawName else { return false }
                climbs += 1
            default: sawName = true
            }
        }
        return climbs <= linkComponents.count - 1
    }

    /// Opens the directory that will hold the last component, creating missing directories,
    /// never following a link. The caller closes the result (unless it is `root`).
    private func openParent(_ parts: [String], member: String, create: Bool) throws(ArchiveError) -> Int32 {
        var dir = root
        for part in parts.dropLast() {
            var next = Glibc.openat(dir, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if next < 0 && errno == ENOENT && create {
                if mkdirat(dir, part, 0o755) != 0 && errno != EEXIST {
                    let failure = SystemCall.error("mkdir '\(part)'", path: rootPath)
                    if dir != root { SystemCall.close(dir) }
                    throw ArchiveError(failure.code, failure.message, path: rootPath, member: member)
                }
                next = Glibc.openat(dir, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            }
            let code = errno
            if dir != root { SystemCall.close(dir) }
            guard next >= 0 else {
                if code == ELOOP || code == ENOTDIR {
                    throw ArchiveError(.unsafePath, "'\(part)' is a symbolic link or not a directory; refusing to write through it", member: member)
                }
                throw ArchiveError(.io(errno: code), "cannot open directory '\(part)': \(String(cString: strerror(code)))", member: member)
            }
            dir = next
        }
        return dir
    }

    private func closeParent(_ fd: Int32) { if fd != root { SystemCall.close(fd) } }

    /// Removes whatever is at `name` (not a directory), so that creating it cannot follow a link.
    private func clear(_ parent: Int32, _ name: String) {
        _ = unlinkat(parent, name, 0)
    }

    private func failure(_ operation: String, member: String) -> ArchiveError {
        let code = errno
        return ArchiveError(.io(errno: code), "\(operation): \(String(cString: strerror(code)))", path: rootPath, member: member)
    }

    /// Starts a member. Content, if any, follows through `write`, then `endMember`.
    func begin(_ header: TarHeader) throws(ArchiveError) {
        entries += 1
        guard entries <= options.maxEntries else {
            throw ArchiveError(.limitExceeded, "more than \(options.maxEntries) members", member: header.path)
        }
        // "./", the first member of every `tar -C dir -c .` archive, is the destination itself,
        // which exists; its mode and owner are the caller's, not the archive's.
        if header.kind == .directory, !header.path.hasPrefix("/"),
           header.path.split(separator: "/", omittingEmptySubsequences: true).allSatisfy({ $0 == "." }) {
            return
        }
        let parts = try components(of: header.path)
        let name = parts.last!
        switch header.kind {
        case .directory:
            let parent = try openParent(parts, member: header.path, create: true)
            defer { closeParent(parent) }
            if mkdirat(parent, name, 0o700) != 0 {
                guard errno == EEXIST else { throw failure("mkdir", member: header.path) }
                var info = stat()
                guard fstatat(parent, name, &info, AT_SYMLINK_NOFOLLOW) == 0, info.st_mode & S_IFMT == S_IFDIR else {
                    throw ArchiveError(.unsafePath, "a non-directory is in the way", member: header.path)
                }
            }
            directories.append((parts, header))
        case .regular:
            let parent = try openParent(parts, member: header.path, create: true)
            clear(parent, name)
            let fd = Glibc.openat(parent, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard fd >= 0 else {
                let error = failure("create", member: header.path)
                closeParent(parent)
                throw error
            }
            current = (fd, parent, name, header)
        case .symbolicLink:
            let target = header.linkTarget ?? ""
            guard !target.utf8.contains(0) else {
                throw ArchiveError(.unsafePath, "link target contains a NUL byte; refused", member: header.path)
            }
            if options.confineSymlinks, !Self.staysInside(target: target, linkComponents: parts) {
                throw ArchiveError(.unsafePath, "symbolic link to '\(target)' leads outside the destination; refused", member: header.path)
            }
            let parent = try openParent(parts, member: header.path, create: true)
            defer { closeParent(parent) }
            clear(parent, name)
            guard symlinkat(target, parent, name) == 0 else { throw failure("symlink", member: header.path) }
            var times = [timespec(tv_sec: Int(header.mtime.seconds), tv_nsec: Int(header.mtime.nanoseconds)),
                         timespec(tv_sec: Int(header.mtime.seconds), tv_nsec: Int(header.mtime.nanoseconds))]
            _ = utimensat(parent, name, &times, AT_SYMLINK_NOFOLLOW)
            if options.restoreOwnership && isRoot {
                _ = fchownat(parent, name, uid_t(truncatingIfNeeded: header.uid), gid_t(truncatingIfNeeded: header.gid), AT_SYMLINK_NOFOLLOW)
            }
        case .hardLink:
            let targetParts = try components(of: header.linkTarget ?? "")
            let targetParent = try openParent(targetParts, member: header.path, create: false)
            defer { closeParent(targetParent) }
            let parent = try openParent(parts, member: header.path, create: true)
            defer { closeParent(parent) }
            clear(parent, name)
            guard linkat(targetParent, targetParts.last!, parent, name, 0) == 0 else {
                throw failure("hard link to '\(header.linkTarget ?? "")'", member: header.path)
            }
        default:
            entries -= 1
            warnings.append("\(header.path): skipped, \(header.kind) members are not extracted")
        }
    }

    func write(_ data: UnsafeRawBufferPointer) throws(ArchiveError) {
        guard let current else { return }
        bytes += UInt64(data.count)
        guard bytes <= byteLimit else {
            throw ArchiveError(.limitExceeded, "more than \(byteLimit) bytes of content; raise the limit if this archive is trusted", member: current.header.path)
        }
        do {
            try SystemCall.writeAll(current.fd, data, path: rootPath)
        } catch {
            throw ArchiveError(error.code, error.message, path: rootPath, member: current.header.path)
        }
    }

    /// Finishes the current file: permissions, owner, times.
    func endMember() throws(ArchiveError) {
        guard let file = current else { return }
        current = nil
        defer {
            SystemCall.close(file.fd)
            closeParent(file.parent)
        }
        let header = file.header
        if options.restoreOwnership && isRoot {
            _ = fchown(file.fd, uid_t(truncatingIfNeeded: header.uid), gid_t(truncatingIfNeeded: header.gid))
        }
        // chmod after chown: chown clears set-id bits.
        let mode = options.restorePermissions ? header.mode & 0o7777 : header.mode & 0o777 & ~0o022
        guard fchmod(file.fd, mode_t(mode)) == 0 else { throw failure("chmod", member: header.path) }
        var times = [timespec(tv_sec: Int(header.mtime.seconds), tv_nsec: Int(header.mtime.nanoseconds)),
                     timespec(tv_sec: Int(header.mtime.seconds), tv_nsec: Int(header.mtime.nanoseconds))]
        guard futimens(file.fd, &times) == 0 else { throw failure("set times", member: header.path) }
    }

    /// The member being written, if the stream stopped inside it.
    var currentMember: String? { current?.header.path }

    /// Removes a file left half-written by a failure, so that nothing partial remains.
    func abandonCurrent() {
        guard let file = current else { return }
        current = nil
        SystemCall.close(file.fd)
        _ = unlinkat(file.parent, file.name, 0)
        closeParent(file.parent)
    }

    /// Applies directory modes and times, deepest first, so that adding their contents did not
    /// change the times and a read-only directory did not block its own contents.
    func finish() throws(ArchiveError) {
        for (parts, header) in directories.reversed() {
            let parent = try openParent(parts, member: header.path, create: false)
            defer { closeParent(parent) }
            let fd = Glibc.openat(parent, parts.last!, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard fd >= 0 else { continue }
            defer { SystemCall.close(fd) }
            if options.restoreOwnership && isRoot {
                _ = fchown(fd, uid_t(truncatingIfNeeded: header.uid), gid_t(truncatingIfNeeded: header.gid))
            }
            let mode = options.restorePermissions ? header.mode & 0o7777 : header.mode & 0o777 & ~0o022
            _ = fchmod(fd, mode_t(mode))
            var times = [timespec(tv_sec: Int(header.mtime.seconds), tv_nsec: Int(header.mtime.nanoseconds)),
                         timespec(tv_sec: Int(header.mtime.seconds), tv_nsec: Int(header.mtime.nanoseconds))]
            _ = futimens(fd, &times)
        }
        directories.removeAll()
    }
}
