#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Writes a generated corpus's files under one root, creating folders as it goes.
///
/// Plain `open`/`write` rather than `FileManager.createFile`: the smallfiles corpus is 100,000
/// files, and a `Data` copy plus attribute handling per file is measurable there.
struct CorpusWriter {
    let root: String
    private(set) var files = 0
    private(set) var bytes = 0
    private var createdFolders: Set<String> = []

    init(root: String) {
        self.root = root
    }

    /// Writes `contents` at `relativePath` (folders `/`-separated), replacing any file there.
    mutating func write(_ relativePath: String, _ contents: [UInt8]) throws {
        let path = root + "/" + relativePath
        if let slash = relativePath.lastIndex(of: "/") {
            let folder = root + "/" + relativePath[..<slash]
            if !createdFolders.contains(folder) {
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
                createdFolders.insert(folder)
            }
        }
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard fd >= 0 else { throw BenchError("cannot create \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        try contents.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = posixWrite(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw BenchError("cannot write \(path): \(String(cString: strerror(errno)))")
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
