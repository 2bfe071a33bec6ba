/// A file or directory on disk and the path it takes inside the archive.
///
/// Several sources make one archive: an app's documents and its caches can sit side by side under
/// names the caller chooses, whatever their places on disk.
public struct PackSource: Sendable, Hashable {
    /// Where the file or directory is on disk.
    public var path: String
    /// Its path inside the archive: relative, `/`-separated, no `.` or `..` components.
    public var archivePath: String
    /// Paths under `path` (as its walk reaches them: `path` + "/" + names) that are not stored,
    /// with what they hold: the migration host's own folder, when an extension appends its whole
    /// container.
    package var skipping: [String] = []

    /// - Parameters:
    ///   - path: the file or directory on disk.
    ///   - archivePath: its path inside the archive; `nil` takes the last component of `path`.
    public init(path: String, archivePath: String? = nil) {
        self.path = path
        self.archivePath = archivePath ?? PackSource.lastComponent(of: path)
    }

    static func lastComponent(of path: String) -> String {
        PathBytes.lastComponent(path) ?? "."
    }

    /// The archive path with redundant slashes and `.` removed, or an error saying why it cannot
    /// be stored: an archive must never carry a name that escapes the extraction root.
    public static func normalizedArchivePath(_ path: String) throws(ArchiveError) -> String {
        // On bytes, as the kernel (and every extractor) will read the name: see ``PathBytes``.
        if PathBytes.isAbsolute(path) {
            throw ArchiveError(.invalidArchivePath, "archive path must be relative", member: path)
        }
        var parts: [String] = []
        for part in PathBytes.components(path) {
            if PathBytes.isDot(part) { continue }
            if PathBytes.isDotDot(part) {
                throw ArchiveError(.invalidArchivePath, "archive path must not contain '..'", member: path)
            }
            parts.append(part)
        }
        if parts.isEmpty {
            throw ArchiveError(.invalidArchivePath, "archive path is empty", member: path)
        }
        if path.utf8.contains(0) {
            throw ArchiveError(.invalidArchivePath, "archive path contains a NUL byte", member: path)
        }
        return parts.joined(separator: "/")
    }
}
