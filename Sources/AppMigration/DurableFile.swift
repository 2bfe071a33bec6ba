public import Foundation
import IndexedArchive

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Whole-file writes that survive a crash or a power cut: after a crash the file holds either its
/// old content or its new content, never a mixture and never nothing.
///
/// A write goes to a new temporary file beside the destination (`O_EXCL`, so two writers never
/// share one), which is synced, renamed over the destination, and then the directory is synced so
/// that the rename itself is on disk. Only when ``write(_:to:)`` returns may the caller act on the
/// new content being there: update a version number, delete an old copy. A crash leaves at most a
/// stray temporary file (named `.NAME.amk-tmp-*`), which ``removeStaleTemporaries(for:)`` deletes.
public enum DurableFile {
    /// The content of the file at `path`, or nil if there is none.
    public static func read(_ path: String) throws -> Data? {
        try refuseNUL(path, "open")
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw DurableFileError(operation: "open", path: path, errno: errno)
        }
        defer { close(fd) }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = buffer.withUnsafeMutableBytes { raw in retrying { systemRead(fd, raw.baseAddress!, raw.count) } }
            if count < 0 { throw DurableFileError(operation: "read", path: path, errno: errno) }
            if count == 0 { return data }
            data.append(contentsOf: buffer[..<count])
        }
    }

    /// Replaces the file at `path` with `data`, durably. The directory must exist.
    public static func write(_ data: Data, to path: String) throws {
        try write(data, to: path, probe: nil)
    }

    package static func write(_ data: Data, to path: String, probe: DurabilityProbe?) throws {
        try refuseNUL(path, "create")
        let directory = parent(of: path)
        let temporary = "\(directory)/.\(name(of: path)).amk-tmp-\(UUID().uuidString.prefix(8))"
        try probe.reach(.createTemporary(path: path))
        let fd = retrying { open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644) }
        if fd < 0 { throw DurableFileError(operation: "create", path: temporary, errno: errno) }
        var renamed = false
        defer {
            // A failed write must not leave its temporary behind. (A crash does; see the type's note.)
            if !renamed { unlink(temporary) }
        }
        do {
            defer { close(fd) }
            try probe.reach(.writeTemporary(path: path))
            try data.withUnsafeBytes { raw in
                var done = 0
                while done < raw.count {
                    let count = retrying { systemWrite(fd, raw.baseAddress! + done, raw.count - done) }
                    if count < 0 { throw DurableFileError(operation: "write", path: temporary, errno: errno) }
                    done += count
                }
            }
            try probe.reach(.syncTemporary(path: path))
            guard retrying({ fsync(fd) }) == 0 else { throw DurableFileError(operation: "fsync", path: temporary, errno: errno) }
        }
        try probe.reach(.rename(path: path))
        guard rename(temporary, path) == 0 else { throw DurableFileError(operation: "rename", path: path, errno: errno) }
        renamed = true
        try syncDirectory(directory, probe: probe)
    }

    /// Removes the file at `path` durably: when this returns, the removal survives a power cut.
    /// - Returns: whether there was a file to remove.
    @discardableResult
    public static func remove(_ path: String) throws -> Bool {
        try remove(path, probe: nil)
    }

    @discardableResult
    package static func remove(_ path: String, probe: DurabilityProbe?) throws -> Bool {
        try refuseNUL(path, "remove")
        var info = stat()
        guard lstat(path, &info) == 0 else {
            if errno == ENOENT { return false }
            throw DurableFileError(operation: "stat", path: path, errno: errno)
        }
        try probe.reach(.unlink(path: path))
        if unlink(path) != 0 {
            if errno == ENOENT { return false }
            throw DurableFileError(operation: "unlink", path: path, errno: errno)
        }
        try syncDirectory(parent(of: path), probe: probe)
        return true
    }

    /// Creates the directory at `path` and any missing parents, syncing each parent so the new
    /// folders survive a power cut along with the files later written into them.
    public static func createDirectory(_ path: String) throws {
        try createDirectory(path, probe: nil)
    }

    package static func createDirectory(_ path: String, probe: DurabilityProbe?) throws {
        try refuseNUL(path, "mkdir")
        var info = stat()
        if stat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFDIR else { throw DurableFileError(operation: "mkdir", path: path, errno: ENOTDIR) }
            return
        }
        let above = parent(of: path)
        if above != path { try createDirectory(above, probe: probe) }
        try probe.reach(.makeDirectory(path: path))
        if mkdir(path, 0o755) != 0 && errno != EEXIST {
            throw DurableFileError(operation: "mkdir", path: path, errno: errno)
        }
        try syncDirectory(above, probe: probe)
    }

    /// Deletes the temporary files that interrupted writes to `path` left behind.
    /// - Returns: how many there were.
    @discardableResult
    public static func removeStaleTemporaries(for path: String) throws -> Int {
        try refuseNUL(path, "remove")
        let directory = parent(of: path)
        let prefix = ".\(name(of: path)).amk-tmp-"
        var info = stat()
        guard stat(directory, &info) == 0 else { return 0 }
        let names = try FileManager.default.contentsOfDirectory(atPath: directory)
        var removed = 0
        // By bytes: `hasPrefix` would also take the temporaries of a canonically equivalent name
        // (`cafe\u{301}` for `caf\u{E9}`), another file whose write may be under way.
        for stale in names where stale.utf8.starts(with: prefix.utf8) {
            if unlink("\(directory)/\(stale)") == 0 { removed += 1 }
        }
        return removed
    }

    /// Syncs the directory at `path`, making the renames, unlinks and mkdirs in it durable.
    package static func syncDirectory(_ path: String, probe: DurabilityProbe?) throws {
        try probe.reach(.syncDirectory(path: path))
        let fd = retrying { open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        if fd < 0 { throw DurableFileError(operation: "open directory", path: path, errno: errno) }
        defer { close(fd) }
        guard retrying({ fsync(fd) }) == 0 else { throw DurableFileError(operation: "fsync directory", path: path, errno: errno) }
    }

    // On bytes: a `/` followed by a combining mark is one `Character` that is not "/".
    /// The kernel reads a path only up to a NUL byte: `f\0.bak` would be `f`, another file than
    /// the one named. Refused with `EINVAL`.
    private static func refuseNUL(_ path: String, _ operation: String) throws {
        if path.utf8.contains(0) { throw DurableFileError(operation: operation, path: path, errno: EINVAL) }
    }

    static func parent(of path: String) -> String {
        guard let (parent, _) = PathBytes.splitAtLastSlash(path) else { return "." }
        return parent.isEmpty ? "/" : parent
    }

    static func name(of path: String) -> String { PathBytes.splitAtLastSlash(path)?.name ?? path }

    private static func retrying<T: BinaryInteger>(_ body: () -> T) -> T {
        while true {
            let result = body()
            if result == -1 && errno == EINTR { continue }
            return result
        }
    }
}

// At file scope, where `DurableFile`'s own `read` and `write` do not hide the system's.
private func systemRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
    read(fd, buffer, count)
}

private func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    write(fd, buffer, count)
}
