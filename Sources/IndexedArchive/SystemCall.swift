import CPlatform
import Tar

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Thin wrappers over the system calls the engine uses: they retry `EINTR` and turn failures into
/// an ``ArchiveError`` that names the call, the path and the errno's text.
enum SystemCall {
    static func error(_ operation: String, path: String?, errno code: Int32 = errno) -> ArchiveError {
        let text = String(cString: strerror(code))
        return ArchiveError(.io(errno: code), "\(operation) failed: \(text)", path: path)
    }

    /// Refuses a path that holds a NUL byte: the kernel would read it only up to the NUL and act
    /// on another file than the one named (`a.tar.xz\0.new` is `a.tar.xz`).
    static func refuseNUL(_ path: String) throws(ArchiveError) {
        if path.utf8.contains(0) {
            throw ArchiveError(.io(errno: EINVAL), "the path holds a NUL byte, which no file name can; refused", path: path)
        }
    }

    static func retrying<T: BinaryInteger>(_ body: () -> T) -> T {
        while true {
            let result = body()
            if result == -1 && errno == EINTR { continue }
            return result
        }
    }

    static func open(_ path: String, _ flags: Int32, mode: mode_t = 0) throws(ArchiveError) -> Int32 {
        try refuseNUL(path)
        let fd = reaching(path) { path in retrying { Platform.open(path, flags | O_CLOEXEC, mode) } }
        guard fd >= 0 else { throw error("open", path: path) }
        return fd
    }

    static func openat(_ dirfd: Int32, _ name: String, _ flags: Int32, mode: mode_t = 0, path: String) throws(ArchiveError) -> Int32 {
        let fd = RawName.withCString(name) { name in retrying { Platform.openat(dirfd, name, flags | O_CLOEXEC, mode) } }
        guard fd >= 0 else { throw error("open", path: path) }
        return fd
    }

    static func close(_ fd: Int32) {
        _ = Platform.close(fd)
    }

    /// Reads up to `count` bytes at `offset`; fewer only at end of file.
    static func pread(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64, path: String?) throws(ArchiveError) -> Int
    {
        var done = 0
        while done < buffer.count {
            let n = retrying { Platform.pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done)) }
            if n < 0 { throw error("read", path: path) }
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// Reads up to `buffer.count` bytes from the current position; fewer only at end of file.
    static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, path: String?) throws(ArchiveError) -> Int {
        var done = 0
        while done < buffer.count {
            let n = retrying { Platform.read(fd, buffer.baseAddress! + done, buffer.count - done) }
            if n < 0 { throw error("read", path: path) }
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// How long one wait for room in a pipe or a socket lasts before the cancellation is looked
    /// at again.
    static let roomWait: Int32 = 100

    /// Writes all of `bytes` to a pipe or a socket without ever blocking for long: a blocking
    /// write into a pipe that its reader stopped taking from (`amk pack -o - | ssh`, the far side
    /// stalled) returns only when the reader reads or goes away, so a cancelled pack waited for the
    /// watchdog to abandon it. Here each wait for room is a `poll(2)` of ``roomWait`` ms, and
    /// `isCancelled` is looked at between them; a pipe gets no more than the room it has (its size
    /// less what is unread, to the page), a socket a non-blocking `send`.
    ///
    /// - Throws: `CancellationError` once `isCancelled`, or ``ArchiveError`` naming the call.
    static func writeAllWatching(
        _ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String?, isSocket: Bool, isCancelled: () -> Bool
    ) throws {
        let page = 4096
        var done = 0
        while done < bytes.count {
            if isCancelled() { throw CancellationError() }
            var entry = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            let ready = Platform.poll(&entry, 1, roomWait)
            if ready < 0 {
                if errno == EINTR { continue }
                throw error("poll", path: path)
            }
            // Not writable yet; an error or a hang-up is left to the write to report.
            if ready == 0 { continue }
            let left = bytes.count - done
            let n: Int
            if isSocket {
                n = Platform.send(fd, bytes.baseAddress! + done, left, Int32(MSG_DONTWAIT))
            } else {
                // Writable means a free page at least: a write of one page never blocks, and one of
                // the room counted from the pipe's size and its unread bytes (rounded up to pages,
                // and a page more for a page the reader is part-way through) does not either.
                var room = page
                #if os(Linux)
                    var unread: Int32 = 0
                    let size = fcntl(fd, amk_getpipe_sz())
                    if size > 0, ioctl(fd, UInt(FIONREAD), &unread) == 0 {
                        room = max(room, Int(size) - ((Int(unread) + page - 1) / page + 1) * page)
                    }
                #endif
                n = Platform.write(fd, bytes.baseAddress! + done, min(left, room))
            }
            if n < 0 {
                if errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK { continue }
                throw error("write", path: path)
            }
            done += n
        }
    }

    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String?) throws(ArchiveError) {
        var done = 0
        while done < bytes.count {
            let n = retrying { Platform.write(fd, bytes.baseAddress! + done, bytes.count - done) }
            if n < 0 { throw error("write", path: path) }
            done += n
        }
    }

    static func fstat(_ fd: Int32, path: String?) throws(ArchiveError) -> stat {
        var info = stat()
        guard Platform.fstat(fd, &info) == 0 else { throw error("stat", path: path) }
        return info
    }

    static func lstat(_ path: String) throws(ArchiveError) -> stat {
        var info = stat()
        guard reaching(path, { Platform.lstat($0, &info) }) == 0 else { throw error("stat", path: path) }
        return info
    }

    static func readlink(_ path: String) throws(ArchiveError) -> [UInt8] {
        var size = 256
        while true {
            var buffer = [UInt8](repeating: 0, count: size)
            let n = buffer.withUnsafeMutableBufferPointer { buffer in
                reaching(path) { Platform.readlink($0, buffer.baseAddress!, size) }
            }
            if n < 0 { throw error("readlink", path: path) }
            if n < size { return Array(buffer[..<n]) }
            size *= 4
            if size > 1 << 20 { throw ArchiveError(.io(errno: ENAMETOOLONG), "symlink target too long", path: path) }
        }
    }

    /// Calls `body` with a name the kernel resolves to `path`, even when `path` is longer than
    /// `PATH_MAX`, and returns what it returns; -1 with `errno` set when the folder holding `path`
    /// cannot be reached.
    ///
    /// A tree may be deeper than any path the kernel accepts (GNU tar and bsdtar pack one: they
    /// walk it by descriptors). The packer names files by path, so a path that long is reached
    /// here instead: its folder is opened in pieces below `PATH_MAX` (each `openat` resolving
    /// links as the kernel would have), and `body` gets `/proc/self/fd/N/name`. Shorter paths,
    /// nearly all of them, go to `body` as they are, with no extra call.
    static func reaching<T: BinaryInteger>(_ path: String, _ body: (UnsafePointer<CChar>) -> T) -> T {
        #if os(Linux)
            let limit = Int(PATH_MAX)
            // An escaped byte (RawName) is one byte on disk but four in `utf8`: a path whose
            // `utf8` fits, nearly every one, fits as bytes too, and is not encoded here.
            guard path.utf8.count >= limit else { return RawName.withCString(path, body) }
            let bytes = RawName.encode(path)
            guard bytes.count >= limit else { return RawName.withCString(path, body) }
            let slashByte = UInt8(ascii: "/")
            guard let slash = bytes.lastIndex(of: slashByte), slash > 0, bytes.count - slash - 1 < limit else {
                errno = ENAMETOOLONG
                return -1
            }
            var folder = -1 as Int32
            func closeFolder() {
                let saved = errno
                if folder >= 0 { close(folder) }
                errno = saved
            }
            var rest = bytes[..<slash]
            while !rest.isEmpty {
                var end = rest.endIndex
                if rest.count >= limit {
                    // The longest run of whole components the kernel takes in one call.
                    guard let cut = rest[..<(rest.startIndex + limit - 1)].lastIndex(of: slashByte), cut > rest.startIndex
                    else {
                        closeFolder()
                        errno = ENAMETOOLONG
                        return -1
                    }
                    end = cut
                }
                let opened = (Array(rest[..<end]) + [0]).withUnsafeBufferPointer { piece in
                    piece.withMemoryRebound(to: CChar.self) { piece in
                        retrying {
                            Platform.openat(folder >= 0 ? folder : AT_FDCWD, piece.baseAddress!, amk_o_path() | O_DIRECTORY | O_CLOEXEC)
                        }
                    }
                }
                closeFolder()
                guard opened >= 0 else { return -1 }
                folder = opened
                rest = rest[end...].drop { $0 == slashByte }
            }
            defer { closeFolder() }
            let short = Array("/proc/self/fd/\(folder)/".utf8) + bytes[(slash + 1)...] + [0]
            return short.withUnsafeBufferPointer { short in short.withMemoryRebound(to: CChar.self) { body($0.baseAddress!) } }
        #else
            return RawName.withCString(path, body)
        #endif
    }

    static func fsync(_ fd: Int32, path: String?) throws(ArchiveError) {
        guard retrying({ Platform.fsync(fd) }) == 0 else { throw error("fsync", path: path) }
    }

    static func rename(_ from: String, _ to: String) throws(ArchiveError) {
        guard RawName.withCString(from, { from in RawName.withCString(to) { Platform.rename(from, $0) } }) == 0 else {
            throw error("rename to '\(to)'", path: from)
        }
    }

    static func unlink(_ path: String) {
        _ = RawName.withCString(path) { Platform.unlink($0) }
    }
}
