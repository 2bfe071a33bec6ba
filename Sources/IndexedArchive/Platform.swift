package import CPlatform
package import Tar

#if canImport(Glibc)
    package import Glibc
#elseif canImport(Darwin)
    package import Darwin
#endif

/// The C library calls the package makes by name, in one place, for Glibc and Darwin alike.
///
/// Call sites inside types that have methods of the same name (`SystemCall.open` calling the C
/// `open`) need the C function spelt out; spelling it `Glibc.open` tied them to Linux. They call
/// these instead, and the fields that differ between the two C libraries (`st_mtim` against
/// `st_mtimespec`) are read here. Only Linux is built and tested (see the README); the Darwin
/// branches follow Darwin's headers.
package enum Platform {
    package static func open(_ path: UnsafePointer<CChar>, _ flags: Int32, _ mode: mode_t) -> Int32 {
        #if canImport(Glibc)
            Glibc.open(path, flags, mode)
        #else
            Darwin.open(path, flags, mode)
        #endif
    }

    package static func openat(_ directory: Int32, _ path: UnsafePointer<CChar>, _ flags: Int32, _ mode: mode_t = 0) -> Int32 {
        #if canImport(Glibc)
            Glibc.openat(directory, path, flags, mode)
        #else
            Darwin.openat(directory, path, flags, mode)
        #endif
    }

    package static func close(_ fd: Int32) -> Int32 {
        #if canImport(Glibc)
            Glibc.close(fd)
        #else
            Darwin.close(fd)
        #endif
    }

    package static func read(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
        #if canImport(Glibc)
            Glibc.read(fd, buffer, count)
        #else
            Darwin.read(fd, buffer, count)
        #endif
    }

    package static func pread(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int, _ offset: off_t) -> Int {
        #if canImport(Glibc)
            Glibc.pread(fd, buffer, count, offset)
        #else
            Darwin.pread(fd, buffer, count, offset)
        #endif
    }

    package static func write(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
        #if canImport(Glibc)
            Glibc.write(fd, buffer, count)
        #else
            Darwin.write(fd, buffer, count)
        #endif
    }

    package static func fstat(_ fd: Int32, _ info: inout stat) -> Int32 {
        #if canImport(Glibc)
            Glibc.fstat(fd, &info)
        #else
            Darwin.fstat(fd, &info)
        #endif
    }

    package static func lstat(_ path: UnsafePointer<CChar>, _ info: inout stat) -> Int32 {
        #if canImport(Glibc)
            Glibc.lstat(path, &info)
        #else
            Darwin.lstat(path, &info)
        #endif
    }

    package static func readlink(_ path: UnsafePointer<CChar>, _ buffer: UnsafeMutableRawPointer, _ size: Int) -> Int {
        let characters = buffer.assumingMemoryBound(to: CChar.self)
        #if canImport(Glibc)
            return Glibc.readlink(path, characters, size)
        #else
            return Darwin.readlink(path, characters, size)
        #endif
    }

    package static func fsync(_ fd: Int32) -> Int32 {
        #if canImport(Glibc)
            Glibc.fsync(fd)
        #else
            Darwin.fsync(fd)
        #endif
    }

    package static func rename(_ from: UnsafePointer<CChar>, _ to: UnsafePointer<CChar>) -> Int32 {
        #if canImport(Glibc)
            Glibc.rename(from, to)
        #else
            Darwin.rename(from, to)
        #endif
    }

    package static func unlink(_ path: UnsafePointer<CChar>) -> Int32 {
        #if canImport(Glibc)
            Glibc.unlink(path)
        #else
            Darwin.unlink(path)
        #endif
    }

    /// The name of an entry `readdir` returned, read in place up to its NUL (never by copying
    /// `d_name` whole, which reads past a short record: ``amk_dirent_name``). Valid until the
    /// next `readdir` on its stream.
    package static func name(of entry: UnsafeMutablePointer<dirent>) -> UnsafeRawBufferPointer {
        let name = amk_dirent_name(entry)!
        return UnsafeRawBufferPointer(start: name, count: strlen(name))
    }

    package static func readdir(_ directory: OpaquePointer) -> UnsafeMutablePointer<dirent>? {
        #if canImport(Glibc)
            Glibc.readdir(directory)
        #else
            Darwin.readdir(UnsafeMutablePointer(directory))
        #endif
    }

    package static func connect(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 {
        #if canImport(Glibc)
            Glibc.connect(fd, address, length)
        #else
            Darwin.connect(fd, address, length)
        #endif
    }

    /// Accepts a connection, close-on-exec from the start (``amk_accept_cloexec``).
    package static func accept(_ fd: Int32) -> Int32 {
        amk_accept_cloexec(fd)
    }

    package static func send(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int, _ flags: Int32) -> Int {
        #if canImport(Glibc)
            Glibc.send(fd, buffer, count, flags)
        #else
            Darwin.send(fd, buffer, count, flags)
        #endif
    }

    package static func recv(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int, _ flags: Int32) -> Int {
        #if canImport(Glibc)
            Glibc.recv(fd, buffer, count, flags)
        #else
            Darwin.recv(fd, buffer, count, flags)
        #endif
    }

    package static func poll(_ entries: UnsafeMutablePointer<pollfd>, _ count: Int, _ milliseconds: Int32) -> Int32 {
        #if canImport(Glibc)
            Glibc.poll(entries, nfds_t(count), milliseconds)
        #else
            Darwin.poll(entries, nfds_t(count), milliseconds)
        #endif
    }

    package static func kill(_ pid: pid_t, _ signal: Int32) -> Int32 {
        #if canImport(Glibc)
            Glibc.kill(pid, signal)
        #else
            Darwin.kill(pid, signal)
        #endif
    }

    package static func exit(_ status: Int32) -> Never {
        #if canImport(Glibc)
            Glibc.exit(status)
        #else
            Darwin.exit(status)
        #endif
    }

    /// A file's modification time from its `stat`, nanoseconds included.
    package static func modificationTime(_ info: stat) -> TarTimestamp {
        #if canImport(Glibc)
            timestamp(info.st_mtim)
        #else
            timestamp(info.st_mtimespec)
        #endif
    }

    /// `st_ctim`: when the inode last changed (content, mode, links, attributes).
    package static func changeTime(_ info: stat) -> TarTimestamp {
        #if canImport(Glibc)
            timestamp(info.st_ctim)
        #else
            timestamp(info.st_ctimespec)
        #endif
    }

    private static func timestamp(_ time: timespec) -> TarTimestamp {
        TarTimestamp(seconds: Int64(time.tv_sec), nanoseconds: UInt32(time.tv_nsec))
    }
}
