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
    /// Opens a file for reading without following a symlink in its last component.
    package var openForReading: @Sendable (_ path: String) throws -> Int32
    package var fstat: @Sendable (_ fd: Int32, _ path: String) throws -> stat
    /// Reads into the buffer from the current position; returns fewer bytes only at end of file.
    package var read: @Sendable (_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer, _ path: String) throws -> Int
    package var close: @Sendable (_ fd: Int32) -> Void

    package init(
        lstat: @escaping @Sendable (String) throws -> stat,
        readlink: @escaping @Sendable (String) throws -> [UInt8],
        listDirectory: @escaping @Sendable (String) throws -> [String],
        openForReading: @escaping @Sendable (String) throws -> Int32,
        fstat: @escaping @Sendable (Int32, String) throws -> stat,
        read: @escaping @Sendable (Int32, UnsafeMutableRawBufferPointer, String) throws -> Int,
        close: @escaping @Sendable (Int32) -> Void
    ) {
        self.lstat = lstat
        self.readlink = readlink
        self.listDirectory = listDirectory
        self.openForReading = openForReading
        self.fstat = fstat
        self.read = read
        self.close = close
    }

    /// The real file system.
    package static let system = FileSystem(
        lstat: { path in try SystemCall.lstat(path) },
        readlink: { path in try SystemCall.readlink(path) },
        listDirectory: { path in try FileSystem.systemListDirectory(path) },
        openForReading: { path in try SystemCall.open(path, O_RDONLY | O_NOFOLLOW | O_NOCTTY) },
        fstat: { fd, path in try SystemCall.fstat(fd, path: path) },
        read: { fd, buffer, path in try SystemCall.read(fd, into: buffer, path: path) },
        close: { fd in SystemCall.close(fd) }
    )

    static func systemListDirectory(_ path: String) throws(ArchiveError) -> [String] {
        let fd = try SystemCall.open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
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
