import Tar

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Which entries a pack leaves out, as `tar --exclude` and `--one-file-system` do.
///
/// Patterns are `fnmatch(3)` wildcards, matched on the bytes of the archive path, as GNU tar
/// matches them by default (unanchored, `*` matching across `/`): against the whole path and
/// against each tail of it that starts after a `/`. So `--exclude '*.o'` drops every object
/// file, `--exclude .git` every `.git` folder, and `--exclude 'build/*'` what lies in any folder
/// named `build`, at any depth (`app/build/x`, `app/sub/build/y`); a pattern with a `/` once
/// matched only from the top (`app/build/*`), and GNU tar's habits excluded nothing. An excluded
/// folder is not entered, so nothing under it is stored either.
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
        let path = UTF8Bytes.droppingTrailingSlash(archivePath)
        // The name's own bytes, not the escapes a `String` holds for bytes that are not UTF-8.
        let bytes = RawName.encode(path) + [0]
        return bytes.withUnsafeBufferPointer { all in
            all.withMemoryRebound(to: CChar.self) { name in
                // The whole path, then each tail that starts after a `/`.
                var starts = [0]
                for index in 0..<(name.count - 1) where all[index] == UInt8(ascii: "/") { starts.append(index + 1) }
                return patterns.contains { pattern in
                    starts.contains { fnmatch(pattern, name.baseAddress! + $0, 0) == 0 }
                }
            }
        }
    }
}
