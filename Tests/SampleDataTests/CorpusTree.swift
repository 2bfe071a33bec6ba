import Foundation
import SampleData
import XZ

import class TestSupport.TemporaryDirectory

/// A generated tree read back from disk, so that two generations can be compared whole and a test
/// can look at any file, link or folder the writer made.
///
/// The generator is tested through what it leaves on disk rather than through its internals,
/// because the disk is what the benchmark's cache and the demo's migration see.
struct CorpusTree: Equatable {
    /// One entry of the tree.
    enum Entry: Equatable {
        case file(bytes: [UInt8], mode: Int)
        case link(target: String)
        case folder
    }

    /// Every entry by path relative to the root.
    var entries: [String: Entry] = [:]

    /// Reads everything under `root`.
    init(root: String) throws {
        guard let enumerator = FileManager.default.enumerator(atPath: root) else { return }
        while let relative = enumerator.nextObject() as? String {
            let path = root + "/" + relative
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            switch attributes[.type] as? FileAttributeType {
            case .typeRegular?:
                let bytes = [UInt8](try Data(contentsOf: URL(filePath: path)))
                entries[relative] = .file(bytes: bytes, mode: (attributes[.posixPermissions] as? Int) ?? 0)
            case .typeSymbolicLink?:
                entries[relative] = .link(target: try FileManager.default.destinationOfSymbolicLink(atPath: path))
            case .typeDirectory?:
                entries[relative] = .folder
            default:
                continue
            }
        }
    }

    /// Runs `generate` with a writer rooted in a new temporary folder and reads back what it wrote.
    static func generate(_ generate: (inout CorpusWriter) throws -> Void) throws -> (tree: CorpusTree, writer: CorpusWriter) {
        let directory = try TemporaryDirectory(prefix: "amk-sampledata")
        return try withExtendedLifetime(directory) {
            var writer = CorpusWriter(root: directory.path("corpus"))
            try generate(&writer)
            return (try CorpusTree(root: writer.root), writer)
        }
    }

    /// The regular files' contents by path.
    var files: [String: [UInt8]] {
        entries.compactMapValues {
            if case .file(let bytes, _) = $0 { bytes } else { nil }
        }
    }

    /// The regular files' contents under `prefix`, concatenated in path order: one buffer to
    /// measure how a kind of data compresses.
    func concatenated(under prefix: String) -> [UInt8] {
        files.filter { $0.key.hasPrefix(prefix) }.sorted { $0.key < $1.key }.flatMap(\.value)
    }

    /// A CRC64 over every path and every file's bytes, in path order: a short value to pin, so
    /// that a change to what the generator writes cannot go unnoticed.
    var digest: UInt64 {
        var crc: UInt64 = 0
        for (path, entry) in entries.sorted(by: { $0.key < $1.key }) {
            crc = CRC.crc64(Array(path.utf8) + [0], previous: crc)
            if case .file(let bytes, _) = entry { crc = CRC.crc64(bytes + [0], previous: crc) }
        }
        return crc
    }
}
