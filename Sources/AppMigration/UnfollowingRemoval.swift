import IndexedArchive

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Removes folders and files without ever following a symbolic link, and without leaving the
/// directory it was given.
///
/// What the host removes (a staging folder, a container's data after a failed import) may hold
/// links that came from an archive or that an extension left, pointing anywhere. Here every step
/// is relative to a descriptor: a child is examined with `fstatat(AT_SYMLINK_NOFOLLOW)`, a link is
/// unlinked as a name and never entered, a folder is opened with `openat(O_NOFOLLOW |
/// O_DIRECTORY)`, so a link swapped in cannot be entered either. The walk climbs back with `..`
/// only after checking that it lands on the very folder (device and inode) it came down from, so
/// it holds one descriptor whatever the depth, and a tree deeper than `PATH_MAX` (an archive can
/// build one) is removed as well as a shallow one: a staging folder that could not be removed
/// would fail every later import. Folders on another file system (a mount point) are left alone.
enum UnfollowingRemoval {
    /// Removes the children of the directory at `path` whose names satisfy `shouldRemove`,
    /// carrying on past failures and throwing the first one at the end.
    ///
    /// - Parameter followingFinalLink: whether `path` itself may be a link to a directory (a
    ///   container root, which is the caller's choice) or must be a real directory (a folder
    ///   inside the container, such as the host's own). Links above it are the caller's choice
    ///   too and are followed.
    static func removeChildren(
        of path: String, followingFinalLink: Bool,
        where shouldRemove: (String) -> Bool
    ) throws(DurableFileError) {
        let flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | (followingFinalLink ? 0 : O_NOFOLLOW)
        let directory = open(path, flags)
        guard directory >= 0 else {
            if errno == ENOENT { return }
            throw DurableFileError(
                operation: followingFinalLink ? "open directory" : "open directory without following a link",
                path: path, errno: errno)
        }
        defer { close(directory) }
        var failures = Failures()
        guard let names = names(in: directory, path: path, failures: &failures) else { throw failures.first! }
        for name in names where shouldRemove(display(name)) {
            removeItem(name, in: directory, path: path + "/" + display(name), failures: &failures)
        }
        if let first = failures.first { throw first }
    }

    /// The first failure met; later ones are counted only by the attempt to carry on.
    private struct Failures {
        var first: DurableFileError?
        mutating func record(_ operation: String, _ path: String, errno code: Int32 = errno) {
            if first == nil { first = DurableFileError(operation: operation, path: path, errno: code) }
        }
    }

    /// A directory level of the walk: what it still holds, and which child the walk is inside.
    private struct Level {
        var device: dev_t
        var inode: ino_t
        var path: String
        var pending: [[CChar]]
        var entered: [CChar]? = nil
    }

    /// Removes `name` (a NUL-terminated name) from the directory `parent`: anything but a folder is
    /// unlinked; a folder is emptied depth first and removed.
    private static func removeItem(_ name: [CChar], in parent: Int32, path: String, failures: inout Failures) {
        var info = stat()
        guard fstatat(parent, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
            if errno != ENOENT { failures.record("lstat", path) }
            return
        }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            if unlinkat(parent, name, 0) != 0 && errno != ENOENT { failures.record("unlink", path) }
            return
        }
        var parentInfo = stat()
        guard fstat(parent, &parentInfo) == 0 else { return failures.record("fstat", path) }
        guard info.st_dev == parentInfo.st_dev else { return failures.record("remove a mount point", path, errno: EXDEV) }
        var current = openDirectory(name, in: parent, path: path, failures: &failures)
        guard current >= 0 else { return }
        guard let top = level(current, path: path, failures: &failures) else {
            close(current)
            return
        }
        var stack = [top]
        while !stack.isEmpty {
            let depth = stack.count - 1
            if let child = stack[depth].pending.popLast() {
                let childPath = stack[depth].path + "/" + display(child)
                guard fstatat(current, child, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
                    if errno != ENOENT { failures.record("lstat", childPath) }
                    continue
                }
                guard info.st_mode & S_IFMT == S_IFDIR else {
                    if unlinkat(current, child, 0) != 0 && errno != ENOENT { failures.record("unlink", childPath) }
                    continue
                }
                guard info.st_dev == stack[depth].device else {
                    failures.record("remove a mount point", childPath, errno: EXDEV)
                    continue
                }
                let opened = openDirectory(child, in: current, path: childPath, failures: &failures)
                guard opened >= 0 else { continue }
                guard let next = level(opened, path: childPath, failures: &failures) else {
                    close(opened)
                    continue
                }
                close(current)
                current = opened
                stack[depth].entered = child
                stack.append(next)
            } else {
                // This folder is as empty as it can be made: climb back and remove it.
                let finished = stack.removeLast()
                guard let above = stack.last else { break }
                let up = openat(current, "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                let code = errno
                close(current)
                current = -1
                var upInfo = stat()
                guard up >= 0, fstat(up, &upInfo) == 0, upInfo.st_dev == above.device, upInfo.st_ino == above.inode else {
                    // Something moved the tree while it was walked: stop rather than guess.
                    if up >= 0 { close(up) }
                    failures.record("climb back to the parent folder", finished.path, errno: up >= 0 ? ESTALE : code)
                    return
                }
                current = up
                if let entered = above.entered, unlinkat(current, entered, AT_REMOVEDIR) != 0 && errno != ENOENT {
                    failures.record("rmdir", finished.path)
                }
            }
        }
        if current >= 0 { close(current) }
        if unlinkat(parent, name, AT_REMOVEDIR) != 0 && errno != ENOENT { failures.record("rmdir", path) }
    }

    /// Opens the folder `name` in `parent` without following a link. A folder without read or
    /// search permission (restored from an archive) is given them first: it is about to go.
    private static func openDirectory(_ name: [CChar], in parent: Int32, path: String, failures: inout Failures) -> Int32 {
        var fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        if fd < 0 && errno == EACCES {
            // fchmodat cannot refuse links on Linux; `name` was just seen as a folder, not a link,
            // in a tree that no one else writes while the container is locked.
            _ = fchmodat(parent, name, 0o700, 0)
            fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        }
        if fd < 0 { failures.record("open directory", path) }
        return fd
    }

    /// The level for the open folder `fd`: its identity and children. Its permissions are
    /// widened for its owner so that its children can be unlinked.
    private static func level(_ fd: Int32, path: String, failures: inout Failures) -> Level? {
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            failures.record("fstat", path)
            return nil
        }
        if info.st_mode & 0o700 != 0o700 { _ = fchmod(fd, (info.st_mode & 0o7777) | 0o700) }
        guard let names = names(in: fd, path: path, failures: &failures) else { return nil }
        return Level(device: info.st_dev, inode: info.st_ino, path: path, pending: names)
    }

    /// The names in the open folder `fd` (not `.` and `..`), each NUL-terminated and kept as the
    /// bytes the kernel gave: a name that is not UTF-8 must still be removable.
    private static func names(in fd: Int32, path: String, failures: inout Failures) -> [[CChar]]? {
        let copy = dup(fd)
        guard copy >= 0, let stream = fdopendir(copy) else {
            failures.record("list directory", path)
            if copy >= 0 { close(copy) }
            return nil
        }
        defer { closedir(stream) }
        var names: [[CChar]] = []
        while true {
            errno = 0
            guard let entry = readdir(stream) else {
                if errno != 0 {
                    failures.record("list directory", path)
                    return nil
                }
                return names
            }
            // In place, up to its NUL: copying `d_name` whole reads past a short record.
            let name = Platform.name(of: entry).map { CChar(bitPattern: $0) }
            if name == [46] || name == [46, 46] { continue }
            names.append(name + [0])
        }
    }

    /// A NUL-terminated name for messages and name checks.
    private static func display(_ name: [CChar]) -> String {
        String(decoding: name.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
