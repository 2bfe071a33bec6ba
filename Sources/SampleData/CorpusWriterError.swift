import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A system call of ``CorpusWriter`` failed.
///
/// It names the call, the path and the errno, because "cannot generate the corpus" does not tell
/// the person running a benchmark or a demo which disk is full or which folder is read-only.
/// Internal: callers report it (its description says it all) rather than handle it.
struct CorpusWriterError: Error, Sendable, CustomStringConvertible, LocalizedError {
    /// The system call, e.g. `"open"`.
    var operation: String
    /// The file concerned.
    var path: String
    /// The `errno` it failed with.
    var errno: Int32

    /// `path: operation failed: strerror`.
    var description: String {
        "\(path): \(operation) failed: \(String(cString: strerror(errno)))"
    }

    /// The same as ``description``, for Foundation's error reporting.
    var errorDescription: String? { description }
}
