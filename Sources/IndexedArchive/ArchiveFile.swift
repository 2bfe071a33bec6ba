#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An archive opened for reading by offset. The descriptor never changes and `pread` shares no
/// file position, so concurrent readers on several threads are safe.
final class ArchiveFile: Sendable {
    let fd: Int32
    let size: UInt64
    let path: String

    /// Opens `path`, which must be a regular file.
    ///
    /// The open is non-blocking: a plain `open` of a FIFO with no writer (or of some devices)
    /// waits indefinitely, inside a system call that neither task cancellation nor the CLI's
    /// signal handling can interrupt. Non-blocking, it returns at once and `fstat` on the
    /// descriptor (not the path, which could be swapped in between) refuses anything but a
    /// regular file. The flag is then cleared, although regular files ignore it.
    init(path: String) throws {
        let fd = try SystemCall.open(path, O_RDONLY | O_NONBLOCK)
        do {
            let info = try SystemCall.fstat(fd, path: path)
            guard info.st_mode & S_IFMT == S_IFREG else {
                throw ArchiveError(.notAnArchive, "not a regular file", path: path)
            }
            let flags = fcntl(fd, F_GETFL)
            guard flags >= 0, fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == 0 else {
                throw SystemCall.error("fcntl", path: path)
            }
            self.size = UInt64(info.st_size)
        } catch {
            SystemCall.close(fd)
            throw error
        }
        self.fd = fd
        self.path = path
    }

    /// Exactly `count` bytes at `offset`, or an error saying the file is truncated there.
    ///
    /// Offsets and counts often come from the archive itself: they are checked against the file's
    /// size before anything is allocated, so a block claiming 2^62 bytes costs nothing.
    func read(at offset: UInt64, count: Int) throws -> [UInt8] {
        var buffer: [UInt8] = []
        try read(at: offset, count: count, into: &buffer)
        return buffer
    }

    /// Exactly `count` bytes at `offset` in `buffer`, replacing what it held and reusing its
    /// storage, or an error saying the file is truncated there.
    func read(at offset: UInt64, count: Int, into buffer: inout [UInt8]) throws {
        guard count >= 0, offset <= size, UInt64(count) <= size - offset else {
            throw ArchiveError(.corrupt, "needs \(count) bytes past the end of the file (\(size) bytes)", path: path, offset: offset)
        }
        ByteArrayPool.resize(&buffer, to: count)
        let got = try buffer.withUnsafeMutableBytes { raw -> Int in
            try SystemCall.pread(fd, into: raw, at: offset, path: path)
        }
        guard got == count else {
            throw ArchiveError(.corrupt, "file ends early", path: path, offset: offset + UInt64(got))
        }
    }

    /// Up to `count` bytes at `offset`; fewer at the end of the file.
    func readAvailable(at offset: UInt64, count: Int) throws -> [UInt8] {
        guard offset < size else { return [] }
        let count = Int(min(UInt64(count), size - offset))
        return try read(at: offset, count: count)
    }

    deinit { SystemCall.close(fd) }
}
