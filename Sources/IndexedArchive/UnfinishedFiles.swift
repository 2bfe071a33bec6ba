import Synchronization
import Tar

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The files extractions are writing right now, so that a process about to end without unwinding
/// can remove them.
///
/// Cancellation removes a half-written member on its way out, but a process that must exit at once
/// (a second Ctrl-C after the first had a second to work, or work stuck past the grace period:
/// `amk`'s signal handling) ends with `_exit`, and what it was writing would stay, cut short, under
/// its own name or as a temporary beside the file it was to replace. Each extractor keeps its
/// current file here; ``removeAll()`` unlinks them.
package enum UnfinishedFiles {
    // A Mutex makes the table safe to touch from the extractors' threads and the signal watcher's.
    private static let files = Mutex<[ObjectIdentifier: (parent: Int32, name: String)]>([:])

    /// `owner` is writing `name` in the folder open as `parent`.
    static func begin(_ owner: ObjectIdentifier, parent: Int32, name: String) {
        files.withLock { $0[owner] = (parent, name) }
    }

    /// `owner` has finished (or removed) its file.
    static func end(_ owner: ObjectIdentifier) {
        files.withLock { _ = $0.removeValue(forKey: owner) }
    }

    /// Removes every file being written and forgets them. For a process about to `_exit`: the
    /// extractors are not told, and must not go on.
    package static func removeAll() {
        files.withLock { table in
            for (_, file) in table { _ = RawName.withCString(file.name) { unlinkat(file.parent, $0, 0) } }
            table = [:]
        }
    }
}
