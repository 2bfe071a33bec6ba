package import Foundation

/// A directory of its own under the system's temporary directory, removed with everything in it
/// when the last reference to it goes away.
///
/// Every test target makes its scratch directories with this one type, so that they all get the
/// same guarantees: the name is unique (`mkdtemp(3)` picks it atomically, so tests running in
/// parallel never share a directory), the prefix says which suite made it (a directory left behind
/// by a crashed run is easy to trace), and the directory goes away without a `defer` at every call
/// site. It is `Sendable` because it only holds constants: a test may hand it to a detached task
/// or another thread, and the directory lives as long as any of them keeps it.
///
/// Swift may end an object's lifetime after its last use rather than at the end of its scope. A
/// test that keeps only a path taken from the directory must therefore keep the directory itself
/// alive while it uses the path (hold the `TemporaryDirectory`, or `withExtendedLifetime`).
package final class TemporaryDirectory: Sendable {
    /// The directory, as a file URL (without a trailing `/`, as `path` is).
    package let url: URL
    /// The directory's path, without a trailing `/`.
    package let path: String

    /// Creates a new, empty directory named `<prefix>-XXXXXX` (six random characters), under
    /// `parent` or else the system's temporary directory.
    package init(prefix: String = "amk-test", in parent: String? = nil) throws {
        var base = parent ?? NSTemporaryDirectory()
        if !base.hasSuffix("/") { base += "/" }
        var template = Array((base + prefix + "-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        path = String(cString: made)
        url = URL(filePath: path, directoryHint: .notDirectory)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// A tmpfs where the machine has one (`/dev/shm`), for tests that write gigabytes that are
    /// mostly zeros: memory that the test gives back, not a disk's writeback for the suites
    /// after it. Nil where there is none.
    package static var memoryBacked: String? {
        access("/dev/shm", W_OK) == 0 ? "/dev/shm" : nil
    }

    /// The URL of `relative` inside the directory.
    package func url(_ relative: String) -> URL { self.url.appending(path: relative, directoryHint: .notDirectory) }

    /// The path of `relative` inside the directory.
    package func path(_ relative: String) -> String { self.path + "/" + relative }
}
