import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Writes a generated corpus's files under one root, creating folders as it goes.
///
/// The corpora give it paths and bytes and never touch the file system themselves, so that a
/// caller decides where a corpus lands (a benchmark's cache, a demo's container).
///
/// Plain `open`/`write` rather than `FileManager.createFile`: the smallfiles corpus is 100,000
/// files, and a `Data` copy plus attribute handling per file is measurable there.
public struct CorpusWriter: Sendable {
    /// The folder every relative path is under.
    public let root: String
    /// Regular files written, for a caller's report of what it generated.
    public private(set) var files = 0
    /// Content bytes written, so that a caller can say how big the corpus came out (a scale gives
    /// counts and totals, not an exact size).
    public private(set) var bytes = 0
    /// Folders known to exist, so that 100,000 files do not cost 100,000 `mkdir` calls.
    private var createdFolders: Set<String> = []

    /// A writer for a corpus under `root`.
    public init(root: String) {
        self.root = root
    }

    /// Writes `contents` at `relativePath` (folders `/`-separated), replacing any file there.
    public mutating func write(_ relativePath: String, _ contents: [UInt8]) throws {
        let path = root + "/" + relativePath
        if let slash = relativePath.lastIndex(of: "/") {
            let folder = root + "/" + relativePath[..<slash]
            if !createdFolders.contains(folder) {
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
                createdFolders.insert(folder)
            }
        }
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
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
}

/// `write(2)` under a name that the struct's own `write` method does not shadow.
private func posixWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    write(fd, buffer, count)
}
