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

    /// A read the file itself refuses, rather than the system failing.
    private static func isRefusedRead(_ error: ArchiveError) -> Bool {
        guard case .io(let code) = error.code else { return false }
        return code == EINVAL || code == EIO || code == EPERM || code == EACCES
    }

    static func read(path: String, fileSystem: FileSystem) throws -> FileContent {
        let fd = try fileSystem.openForReading(path)
        defer { fileSystem.close(fd) }
        let status = FileStatus(try fileSystem.fstat(fd, path))
        guard status.isRegular else {
            throw ArchiveError(.changedWhileReading, "is no longer a regular file", path: path)
        }
        // One byte more than the size, to notice a file that grew.
        var bytes = [UInt8](repeating: 0, count: Int(status.size) + 1)
        let count: Int
        do {
            count = try bytes.withUnsafeMutableBytes { try fileSystem.read(fd, $0, path) }
            // cancellation: only an ArchiveError from the read is taken; anything else is thrown on
        } catch let error as ArchiveError where status.size == 0 && Self.isRefusedRead(error) {
            // A file that says it is empty and refuses to be read (`/proc/PID/attr/*`, `mem`,
            // `pagemap`: EINVAL, EIO, EPERM) is stored empty, as GNU tar stores it, never reading
            // a file of size 0; the probe for growth failed the whole pack, even --allow-changes.
            count = 0
        }
        let grew = count > Int(status.size)
        bytes.removeLast(bytes.count - min(count, Int(status.size)))
        let after = FileStatus(try fileSystem.fstat(fd, path))
        return FileContent(
            status: status, bytes: bytes, checksum: CRC.crc64(bytes), grew: grew, modified: after.changed(since: status))
    }
}
