import Tar

#if canImport(Glibc)
    package import Glibc
#elseif canImport(Darwin)
    package import Darwin
#endif

/// The file-system calls the packer reads through.
///
/// Production uses ``system``, which calls the kernel directly. Tests build one whose calls stall,
/// fail with a chosen errno or return short reads, to prove that the engine reports such faults
/// instead of hanging or writing a corrupt archive.
package struct FileSystem: Sendable {
    package var lstat: @Sendable (_ path: String) throws -> stat
    package var readlink: @Sendable (_ path: String) throws -> [UInt8]
    /// The names in a directory (without `.` and `..`), sorted bytewise.
    package var listDirectory: @Sendable (_ path: String) throws -> [String]
    /// Opens a file for reading without following a symlink in its last component, and without
    /// waiting: a FIFO or device opens at once, for the caller's `fstat` to refuse.
    package var openForReading: @Sendable (_ path: String) throws -> Int32
    package var fstat: @Sendable (_ fd: Int32, _ path: String) throws -> stat
    /// Reads into the buffer from the current position; returns fewer bytes only at end of file.
    package var read: @Sendable (_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer, _ path: String) throws -> Int
    package var close: @Sendable (_ fd: Int32) -> Void
    /// When the current position is in a hole of a sparse file, moves it past the hole (at most
    /// `limit` bytes) and returns how far it moved; 0 at data, or where the file system cannot
    /// tell (which leaves the bytes to `read`, as before).
    package var skipHole: @Sendable (_ fd: Int32, _ limit: Int, _ path: String) throws -> Int

    package init(
        lstat: @escaping @Sendable (String) throws -> stat,
        readlink: @escaping @Sendable (String) throws -> [UInt8],
        listDirectory: @escaping @Sendable (String) throws -> [String],
        openForReading: @escaping @Sendable (String) throws -> Int32,
        fstat: @escaping @Sendable (Int32, String) throws -> stat,
        read: @escaping @Sendable (Int32, UnsafeMutableRawBufferPointer, String) throws -> Int,
        close: @escaping @Sendable (Int32) -> Void,
        skipHole: @escaping @Sendable (Int32, Int, String) throws -> Int = { _, _, _ in 0 }
    ) {
        self.lstat = lstat
        self.readlink = readlink
        self.listDirectory = listDirectory
        self.openForReading = openForReading
        self.fstat = fstat
        self.read = read
        self.close = close
        self.skipHole = skipHole
    }

    /// The real file system.
    package static let system = FileSystem(
        lstat: { path in try SystemCall.lstat(path) },
        readlink: { path in try SystemCall.readlink(path) },
        listDirectory: { path in try FileSystem.systemListDirectory(path) },
        openForReading: { path in try FileSystem.openWithoutWaiting(path) },
        fstat: { fd, path in try SystemCall.fstat(fd, path: path) },
        read: { fd, buffer, path in try SystemCall.read(fd, into: buffer, path: path) },
        close: { fd in SystemCall.close(fd) },
        skipHole: { fd, limit, path in try FileSystem.systemSkipHole(fd, limit: limit, path: path) }
    )

    /// Opens `path` non-blocking, then clears the flag.
    ///
    /// A listed file replaced by a FIFO without a writer (or by some devices) makes a plain
    /// `open` wait for good, in a call that neither cancellation nor the watchdog can end: the
    /// pack failed as stalled. Non-blocking, it returns at once, and the caller's `fstat` finds
    /// what it is. Regular files ignore the flag, but it is cleared so that reads stay plain ones
    /// whatever the file system.
    static func openWithoutWaiting(_ path: String) throws(ArchiveError) -> Int32 {
        let fd = try SystemCall.open(path, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK)
        let flags = fcntl(fd, F_GETFL)
        guard flags >= 0, fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == 0 else {
            let failure = SystemCall.error("fcntl", path: path)
            SystemCall.close(fd)
            throw failure
        }
        return fd
    }

    /// This file system, with every file opened for reading and every folder listed checked,
    /// once open, to lie under `root` (a real path, links resolved).
    ///
    /// A path checked against a folder and then opened can lead elsewhere by the time it is
    /// opened: a folder on the way swapped for a link between the check and the open (an
    /// extension exporting its container can do it, and got another folder's files into its
    /// archive so). What the descriptor is open on is what counts: the kernel's name for it
    /// (`/proc/self/fd`) must be `root` or under it, or the file is refused.
    package func confined(to root: String) -> FileSystem {
        confined(toAnyOf: [root])
    }

    /// ``confined(to:)`` with several roots, each a real path: what is opened must lie under one
    /// of them (an app's container and its app groups).
    package func confined(toAnyOf roots: [String]) -> FileSystem {
        var confined = self
        let open = openForReading
        confined.openForReading = { path in try FileSystem.checked(try open(path), path: path, under: roots) }
        let list = listDirectory
        confined.listDirectory = { path in
            // Checked open, then listed through this file system's own call (which tests replace
            // to inject faults). A swap in between could only show the names of an outside
            // folder: every file under it is opened, and checked, again.
            let fd = try FileSystem.checked(try SystemCall.open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW), path: path, under: roots)
            defer { SystemCall.close(fd) }
            return try list(path)
        }
        return confined
    }

    /// Whether the kernel names open descriptors here (`/proc/self/fd`), which
    /// ``confined(to:)`` needs.
    package static let canNameDescriptors: Bool = {
        #if os(Linux)
            access("/proc/self/fd", F_OK) == 0
        #else
            false
        #endif
    }()

    /// `fd` if it names one of `roots` or something under it; otherwise it is closed and refused.
    static func checked(_ fd: Int32, path: String, under roots: [String]) throws(ArchiveError) -> Int32 {
        do {
            try check(fd, path: path, under: roots)
        } catch {
            SystemCall.close(fd)
            throw error
        }
        return fd
    }

    /// Throws unless the open descriptor `fd` names one of `roots` or something under it.
    static func check(_ fd: Int32, path: String, under roots: [String]) throws(ArchiveError) {
        #if os(Linux)
            let real: [UInt8]
            do {
                real = try SystemCall.readlink("/proc/self/fd/\(fd)")
                // cancellation: readlink throws only ArchiveError (typed throws); this one clause takes ENAMETOOLONG
            } catch let error where error.code == .io(errno: ENAMETOOLONG) {
                // The kernel names a descriptor in one page: a path deeper than that (a tree
                // deeper than PATH_MAX, which packs and extracts) cannot be checked so, and is
                // let through rather than refusing every file down there.
                return
            }
            let inside = roots.contains { root in
                let prefix = RawName.encode(root)
                return real.elementsEqual(prefix)
                    || (real.starts(with: prefix)
                        && (prefix.last == UInt8(ascii: "/") || real.dropFirst(prefix.count).first == UInt8(ascii: "/")))
            }
            guard inside else {
                let outside = roots.map { "'\($0)'" }.joined(separator: " and ")
                throw ArchiveError(
                    .unsafePath,
                    "was opened at '\(RawName.decode(real))', outside \(outside): a folder on its way was swapped for a link after it was checked",
                    path: path)
            }
        #endif
    }

    static func systemListDirectory(_ path: String) throws(ArchiveError) -> [String] {
        try list(try SystemCall.open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW), path: path)
    }

    /// The names in the folder open as `fd` (which it closes).
    static func list(_ fd: Int32, path: String) throws(ArchiveError) -> [String] {
        guard let dir = fdopendir(fd) else {
            let failure = SystemCall.error("opendir", path: path)
            SystemCall.close(fd)
            throw failure
        }
        defer { closedir(dir) }
        var names: [String] = []
        while true {
            errno = 0
            guard let entry = Platform.readdir(dir) else {
                if errno != 0 { throw SystemCall.error("readdir", path: path) }
                break
            }
            // Names keep their bytes, UTF-8 or not (RawName), so the file is found again and
            // archived under the name it has.
            let bytes = Platform.name(of: entry)
            if bytes.elementsEqual(".".utf8) || bytes.elementsEqual("..".utf8) { continue }
            names.append(RawName.decode(bytes))
        }
        names.sort { RawName.encode($0).lexicographicallyPrecedes(RawName.encode($1)) }
        return names
    }
}
