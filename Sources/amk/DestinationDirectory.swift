import IndexedArchive
import Tar

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The folder `amk extract -C DIR` writes into, created with its missing parents like `mkdir -p`.
///
/// The command creates it only once the archive has opened, so a mistyped archive path leaves
/// no folder behind; and it remembers which folders it made, so that an extraction that fails
/// before writing anything (a file that turns out not to be xz, a member that matches nothing)
/// removes them again. Folders that already existed are never removed.
struct DestinationDirectory {
    /// The folders this created, outermost first.
    private(set) var created: [String] = []

    /// Creates `path` and its missing parents, mode 0755 (less the umask) as the engine uses.
    /// - Throws: ``ArchiveError`` `.io` naming the folder that could not be created.
    init(creating path: String) throws {
        var prefix = PathBytes.isAbsolute(path) ? "/" : ""
        for component in PathBytes.components(path) {
            prefix += (prefix.isEmpty || UTF8Bytes.endsWithSlash(prefix) ? "" : "/") + component
            if mkdir(prefix, 0o755) == 0 {
                created.append(prefix)
            } else if errno != EEXIST {
                let code = errno
                throw ArchiveError(.io(errno: code), "mkdir failed: \(String(cString: strerror(code)))", path: prefix)
            }
        }
    }

    /// Removes the folders this created, innermost first, as long as they are empty: whatever was
    /// extracted into them stays.
    func removeIfEmpty() {
        for folder in created.reversed() where rmdir(folder) != 0 { return }
    }
}
