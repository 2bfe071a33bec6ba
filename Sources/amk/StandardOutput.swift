import ArgumentParser
import Foundation
import IndexedArchive

/// A failure to write standard output, reported as coreutils reports it: a listing or a report
/// sent to a full disk (`amk list A > /dev/full`) is an error, not a success with nothing written.
enum StandardOutput {
    /// Throws for a write to standard output that failed with `failure` (``error(for:)``).
    static func check(_ failure: Int32?) throws {
        if let failure { throw error(for: failure) }
    }

    /// Flushes what `print` buffered and returns the error if that failed, for the last thing a
    /// command that succeeded does before it exits. (`fflush(nil)` flushes every stream, and
    /// names none of C's global streams, which Swift 6 sees as shared mutable state; a stream
    /// whose earlier flush failed still holds what it could not write, so it fails again here.)
    static func flushFailure() -> (any Error)? {
        fflush(nil) == 0 ? nil : error(for: errno)
    }

    /// Whether `path` names the file standard output is (`-o /dev/stdout`, `/proc/self/fd/1`, or
    /// the very file stdout was redirected to): an archive written there shares standard output,
    /// and a summary printed on it would land inside the archive, as it did (`amk pack d -o
    /// /dev/stdout | xz -t` failed).
    static func isTheSameFile(as path: String) -> Bool {
        var output = stat()
        var named = stat()
        guard fstat(STDOUT_FILENO, &output) == 0, stat(path, &named) == 0 else { return false }
        return output.st_dev == named.st_dev && output.st_ino == named.st_ino
    }

    /// Quietly status 1 when the reader went away (`| head`), as `extract -O` ends then; the
    /// reason otherwise.
    private static func error(for failure: Int32) -> any Error {
        guard failure != EPIPE else { return ExitCode(AMK.failureStatus) }
        return ArchiveError(.io(errno: failure), "write failed: \(String(cString: strerror(failure)))", path: "standard output")
    }
}
