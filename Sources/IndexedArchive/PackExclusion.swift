#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Which entries a pack leaves out, as `tar --exclude` and `--one-file-system` do.
///
/// Patterns are `fnmatch(3)` wildcards, matched on the bytes of the archive path, as GNU tar
/// matches them: a pattern without a `/` is compared with each entry's last component
/// (`--exclude '*.o'` drops every object file, `--exclude .git` every `.git` folder), one with a
/// `/` with the whole archive path (`--exclude 'app/build/*'`), its `*` matching across `/`. An
/// excluded folder is not entered, so nothing under it is stored either.
public struct PackExclusion: Sendable, Hashable {
    /// The `fnmatch(3)` patterns.
    public var patterns: [String]
    /// Store a folder that is on another file system than its root (a mount point) but nothing
    /// under it, as `tar --one-file-system` does.
    public var oneFileSystem: Bool

    /// Excludes what matches `patterns` and, with `oneFileSystem`, what lies on another file system than its source.
    public init(patterns: [String] = [], oneFileSystem: Bool = false) {
        self.patterns = patterns
        self.oneFileSystem = oneFileSystem
    }

    /// Whether the entry stored as `archivePath` is left out.
    public func excludes(archivePath: String) -> Bool {
        guard !patterns.isEmpty else { return false }
        let last = PathBytes.components(archivePath).last ?? archivePath
        for pattern in patterns {
            let subject = pattern.utf8.contains(UInt8(ascii: "/")) ? archivePath : last
            if fnmatch(pattern, subject, 0) == 0 { return true }
        }
        return false
    }
}
