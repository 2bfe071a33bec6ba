public import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A system call made by ``DurableFile``, or by the host while it removes a staging folder or a
/// container's data, failed.
///
/// It names the operation, the path and the errno, because "could not save" is useless to the
/// person who has to find out which disk is full or which folder is read-only.
public struct DurableFileError: Error, Sendable, CustomStringConvertible, LocalizedError {
    /// The system call, e.g. `"fsync"`.
    public var operation: String
    /// The file concerned.
    public var path: String
    /// The `errno` it failed with.
    public var errno: Int32

    /// An error for `operation` (`open`, `fsync`, `rename`, ...) on `path`, with the `errno` it set.
    public init(operation: String, path: String, errno: Int32) {
        self.operation = operation
        self.path = path
        self.errno = errno
    }

    /// `path: operation failed: strerror`.
    public var description: String {
        "\(path): \(operation) failed: \(String(cString: strerror(errno)))"
    }

    /// The same as ``description``, for Foundation's error reporting.
    public var errorDescription: String? { description }
}
