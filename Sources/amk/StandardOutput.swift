import ArgumentParser
import Foundation
import IndexedArchive

/// A failure to write standard output, reported as coreutils reports it: a listing or a report
/// sent to a full disk (`amk list A > /dev/full`) is an error, not a success with nothing written.
enum StandardOutput {
    /// Throws for a write to standard output that failed with `failure`: quietly (status 1) when
    /// the reader went away (`| head`), as `extract -O` ends then, and with the reason otherwise.
    static func check(_ failure: Int32?) throws {
        guard let failure else { return }
        if failure == EPIPE { throw ExitCode(AMK.failureStatus) }
        throw outputError(failure)
    }

    /// Flushes what `print` buffered and throws as ``check(_:)`` if that failed: the last thing a
    /// command that succeeded does before it exits. (`fflush(nil)` flushes every stream, and
    /// names none of C's global streams, which Swift 6 sees as shared mutable state; a stream
    /// whose earlier flush failed still holds what it could not write, so it fails again here.)
    static func flush() throws {
        if fflush(nil) != 0 { try check(errno) }
    }

    /// ``flush()``'s error, returned: for the path that is already reporting an outcome.
    static func flushFailure() -> (any Error)? {
        guard fflush(nil) != 0 else { return nil }
        let failure = errno
        return failure == EPIPE ? ExitCode(AMK.failureStatus) : outputError(failure)
    }

    private static func outputError(_ failure: Int32) -> ArchiveError {
        ArchiveError(.io(errno: failure), "write failed: \(String(cString: strerror(failure)))", path: "standard output")
    }
}
