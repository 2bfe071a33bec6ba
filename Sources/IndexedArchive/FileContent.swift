import Tar
import XZ

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A small file read whole in one job, so that thousands of small files cost one thread hop per
/// batch rather than three per file.
struct FileContent: Sendable {
    var status: FileStatus
    var bytes: [UInt8]
    var checksum: UInt64
    /// Bytes that were there past the size `fstat` reported.
    var grew: Bool
    /// The modification or change time moved while the file was read: what was read may mix
    /// old and new.
    var modified = false

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
        let after = FileStatus(try fileSystem.fstat(fd, path))
        return FileContent(
            status: status, bytes: bytes, checksum: CRC.crc64(bytes), grew: grew, modified: after.changed(since: status))
    }
}
