import Foundation
import IndexedArchive
import TestSupport

extension TemporaryDirectory {
    /// A new, empty subdirectory.
    func subdirectory(_ name: String) throws -> String {
        let full = path + "/" + name
        try? FileManager.default.removeItem(atPath: full)
        try FileManager.default.createDirectory(atPath: full, withIntermediateDirectories: true)
        return full
    }
}

/// A tree of text files to pack: a few large files (read in slices), many small ones (read in
/// batches), nested directories, an empty directory, a symlink and a hard link.
struct SourceTree {
    /// The tree's root on disk; it is packed as `archiveName`.
    let root: String
    let archiveName: String
    /// Every regular file, with its size.
    let files: [(path: String, size: Int)]
    /// Every directory, the root included.
    let directories: [String]
    let symlinks: [String]
    /// Second names of a file already stored: the pack records them as links and never opens them.
    let hardLinks: [String]

    /// Files up to this size take the engine's small-file path (one read of size + 1 bytes).
    static let smallFileLimit = 256 * 1024

    var largeFiles: [(path: String, size: Int)] { files.filter { $0.size > Self.smallFileLimit } }
    var smallFiles: [(path: String, size: Int)] { files.filter { $0.size <= Self.smallFileLimit } }
    var totalBytes: Int { files.reduce(0) { $0 + $1.size } }
    /// The files the pack opens and reads.
    var readFiles: [(path: String, size: Int)] { files.filter { !hardLinks.contains($0.path) } }

    /// Builds a tree of about `largeBytes` in large files plus `smallBytes` in small ones.
    static func make(in parent: String, name: String, seed: UInt64, largeFiles: [Int], smallBytes: Int) throws -> SourceTree {
        var rng = SeededGenerator(seed: seed)
        let root = parent + "/" + name
        let manager = FileManager.default
        var files: [(String, Int)] = []
        var directories = [root]
        func write(_ path: String, _ size: Int) throws {
            let bytes = textBytes(count: size, seed: rng.next())
            guard manager.createFile(atPath: path, contents: Data(bytes)) else {
                throw ArchiveError(.io(errno: errno), "could not create the file", path: path)
            }
            files.append((path, size))
        }
        try manager.createDirectory(atPath: root + "/big", withIntermediateDirectories: true)
        directories.append(root + "/big")
        for (index, size) in largeFiles.enumerated() { try write(root + "/big/blob-\(index).txt", size) }
        var written = 0
        var directoryIndex = 0
        while written < smallBytes {
            let directory = root + "/docs/d\(directoryIndex)"
            try manager.createDirectory(atPath: directory, withIntermediateDirectories: true)
            if directoryIndex == 0 { directories.append(root + "/docs") }
            directories.append(directory)
            for fileIndex in 0..<12 where written < smallBytes {
                let size = Int.random(in: 200...40_000, using: &rng)
                try write(directory + "/note-\(fileIndex).txt", size)
                written += size
            }
            directoryIndex += 1
        }
        try manager.createDirectory(atPath: root + "/empty", withIntermediateDirectories: true)
        directories.append(root + "/empty")
        try manager.createSymbolicLink(atPath: root + "/link", withDestinationPath: "docs/d0/note-0.txt")
        guard link(root + "/docs/d0/note-1.txt", root + "/hard-link.txt") == 0 else {
            throw ArchiveError(.io(errno: errno), "link failed", path: root + "/hard-link.txt")
        }
        let hardSize = files.first { $0.0 == root + "/docs/d0/note-1.txt" }?.1 ?? 0
        files.append((root + "/hard-link.txt", hardSize))
        return SourceTree(
            root: root, archiveName: name, files: files.sorted { $0.0 < $1.0 },
            directories: directories.sorted(), symlinks: [root + "/link"], hardLinks: [root + "/hard-link.txt"])
    }

    var source: PackSource { PackSource(path: root, archivePath: archiveName) }
}

/// Text-like bytes that compress about as well as real documents do.
func textBytes(count: Int, seed: UInt64) -> [UInt8] {
    var rng = SeededGenerator(seed: seed)
    let words = [
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
        "{\"id\":", "\"name\":", "true", "false", "null", "0.5", "1024", "\n", ", ", "<key>", "</key>",
        "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango"
    ]
    var out: [UInt8] = []
    out.reserveCapacity(count + 16)
    while out.count < count {
        out.append(contentsOf: words[Int(rng.next() % UInt64(words.count))].utf8)
        if rng.next() % 7 == 0 { out.append(contentsOf: String(rng.next() % 100_000).utf8) }
        out.append(32)
    }
    out.removeLast(out.count - count)
    return out
}

/// The types, contents and link targets of a tree, for comparing an extracted tree with its source.
struct TreeContents: Equatable {
    enum Item: Equatable {
        case file([UInt8])
        case directory
        case symlink(String)
        case other
    }

    var items: [String: Item]

    init(_ root: String) throws {
        items = [:]
        guard let enumerator = FileManager.default.enumerator(atPath: root) else { return }
        while let relative = enumerator.nextObject() as? String {
            let full = root + "/" + relative
            var info = stat()
            guard lstat(full, &info) == 0 else { continue }
            switch info.st_mode & S_IFMT {
            case S_IFREG: items[relative] = .file(Array(FileManager.default.contents(atPath: full) ?? Data()))
            case S_IFDIR: items[relative] = .directory
            case S_IFLNK: items[relative] = .symlink(try FileManager.default.destinationOfSymbolicLink(atPath: full))
            default: items[relative] = .other
            }
        }
    }

    /// The first few differences, for a failure message.
    func differences(from other: TreeContents) -> String {
        var lines: [String] = []
        for key in Set(items.keys).union(other.items.keys).sorted() where items[key] != other.items[key] {
            func describe(_ item: Item?) -> String {
                switch item {
                case nil: return "absent"
                case .file(let bytes)?: return "file of \(bytes.count) bytes"
                case .directory?: return "directory"
                case .symlink(let target)?: return "symlink to \(target)"
                case .other?: return "other"
                }
            }
            lines.append("\(key): \(describe(items[key])) vs \(describe(other.items[key]))")
            if lines.count == 5 { break }
        }
        return lines.joined(separator: "; ")
    }
}

/// Leftovers of the writer in a directory: hidden temporary files named `.<name>.amk-<random>`.
func temporaryFiles(in directory: String) -> [String] {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
    return names.filter { $0.hasPrefix(".") && $0.contains(".amk-") }.sorted()
}

func fileExists(_ path: String) -> Bool {
    var info = stat()
    return lstat(path, &info) == 0
}

/// The package's root, found from this file's place in it (Tests/StressTests/<file>).
func packageRoot(filePath: String = #filePath) -> URL {
    URL(fileURLWithPath: filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
}

/// The `amk` tool built beside the tests, if it exists and has a `pack` subcommand.
enum AmkTool {
    static let path = BuildProducts.path("amk")

    static let canPack: Bool = {
        guard FileManager.default.isExecutableFile(atPath: path),
            let help = try? ChildProcess.run(path, ["pack", "--help"], environment: [:])
        else { return false }
        // Without the subcommand, `amk pack --help` prints the tool's own help and succeeds too.
        return help.status == 0 && help.stdoutString.contains("amk pack")
    }()
}
