import Tar
import XZ

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What `fstat` said of an open file, in the fields the packer stores.
struct FileStatus: Sendable {
    var isRegular: Bool
    var size: UInt64
    var mode: UInt32
    var uid: UInt64
    var gid: UInt64
    var mtime: TarTimestamp

    init(_ info: stat) {
        isRegular = info.st_mode & S_IFMT == S_IFREG
        size = UInt64(max(0, info.st_size))
        mode = UInt32(info.st_mode) & 0o7777
        uid = UInt64(info.st_uid)
        gid = UInt64(info.st_gid)
        mtime = Platform.modificationTime(info)
    }
}

/// A small file read whole in one job, so that thousands of small files cost one thread hop per
/// batch rather than three per file.
struct FileContent: Sendable {
    var status: FileStatus
    var bytes: [UInt8]
    var checksum: UInt64
    /// Bytes that were there past the size `fstat` reported.
    var grew: Bool

    static func read(path: String, fileSystem: FileSystem) throws -> FileContent {
        let fd = try fileSystem.openForReading(path)
        defer { fileSystem.close(fd) }
        let status = FileStatus(try fileSystem.fstat(fd, path))
        guard status.isRegular else {
            throw ArchiveError(.changedWhileReading, "is no longer a regular file", path: path)
        }
        // One byte more than the size, to notice a file that grew.
        var bytes = [UInt8](repeating: 0, count: Int(status.size) + 1)
        let count = try bytes.withUnsafeMutableBytes { try fileSystem.read(fd, $0, path) }
        let grew = count > Int(status.size)
        bytes.removeLast(bytes.count - min(count, Int(status.size)))
        return FileContent(status: status, bytes: bytes, checksum: CRC.crc64(bytes), grew: grew)
    }
}
