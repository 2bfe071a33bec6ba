import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Writes a generated corpus's files under one root, creating folders as it goes.
///
/// The corpora give it paths and bytes and never touch the file system themselves, so that a
/// caller decides where a corpus lands (a benchmark's cache, a demo's container) and what it adds
/// around it: the links, empty folders and modes that a migration must carry too, which
/// ``link(_:to:)``, ``createFolder(_:)`` and ``setMode(_:of:)`` make.
///
/// Plain `open`/`write` rather than `FileManager.createFile`: the smallfiles corpus is 100,000
/// files, and a `Data` copy plus attribute handling per file is measurable there.
public struct CorpusWriter: Sendable {
    /// The folder every relative path is under; created on the first write if it is missing.
    public let root: String
    /// Regular files written, for a caller's report of what it generated.
    public private(set) var files = 0
    /// Content bytes written, so that a caller can say how big the corpus came out (scales are
    /// approximate: see ``AppDataCorpus/bytesAtScaleOne``).
    public private(set) var bytes = 0
    /// Symbolic links made.
    public private(set) var links = 0
    /// Folders known to exist, so that 100,000 files do not cost 100,000 `mkdir` calls.
    private var createdFolders: Set<String> = []

    /// A writer for a corpus under `root`.
    public init(root: String) {
        self.root = root
    }

    /// Writes `contents` at `relativePath` (folders `/`-separated), replacing any file there.
    ///
    /// The file is created with mode 0644 less the process's umask, as any program's files are;
    /// ``setMode(_:of:)`` gives it an exact mode.
    public mutating func write(_ relativePath: String, _ contents: [UInt8]) throws {
        let path = try prepare(relativePath)
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw CorpusWriterError(operation: "open", path: path, errno: errno) }
        defer { close(fd) }
        try contents.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = posixWrite(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw CorpusWriterError(operation: "write", path: path, errno: errno)
                }
                offset += n
            }
        }
        files += 1
        bytes += contents.count
    }

    /// Makes a symbolic link at `relativePath` whose target is `target`, taken as it is (relative
    /// to the link's folder unless it starts with `/`), because archivers store a link's target
    /// as text and a migration must carry it unchanged.
    public mutating func link(_ relativePath: String, to target: String) throws {
        let path = try prepare(relativePath)
        guard symlink(target, path) == 0 else { throw CorpusWriterError(operation: "symlink", path: path, errno: errno) }
        links += 1
    }

    /// Makes the folder `relativePath` and its parents, for a tree that must hold an empty folder:
    /// one with files in it is made by writing them.
    public mutating func createFolder(_ relativePath: String) throws {
        let path = root + "/" + relativePath
        try createFolderOnce(path)
    }

    /// Gives the file or folder at `relativePath` exactly `mode` (`0o600`, `0o755`), whatever the
    /// umask: private databases and executable scripts are what a migration must restore as they were.
    public func setMode(_ mode: Int, of relativePath: String) throws {
        let path = root + "/" + relativePath
        guard chmod(path, mode_t(mode)) == 0 else { throw CorpusWriterError(operation: "chmod", path: path, errno: errno) }
    }

    /// The absolute path of `relativePath`, its folder made if this writer has not made it yet.
    private mutating func prepare(_ relativePath: String) throws -> String {
        if let slash = relativePath.lastIndex(of: "/") {
            try createFolderOnce(root + "/" + relativePath[..<slash])
        } else {
            try createFolderOnce(root)
        }
        return root + "/" + relativePath
    }

    private mutating func createFolderOnce(_ folder: String) throws {
        if !createdFolders.contains(folder) {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            createdFolders.insert(folder)
        }
    }
}

/// `write(2)` under a name that the struct's own `write` method does not shadow.
private func posixWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    write(fd, buffer, count)
}
