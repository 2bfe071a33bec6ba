import AppMigration
import Foundation
import IndexedArchive

/// Checks that the demo's migration carried everything: the destination container must hold
/// exactly the source's files (bytes and modes), links and folders, because "it ran without an
/// error" is not what a migration promises.
///
/// It walks the two folders the `sample` extension migrates, Documents and Library/Application
/// Support, which is where ``DemoContainer`` puts everything it generates.
enum DemoComparison {
    /// What a walk found, by path relative to the container root: the comparison needs each
    /// file's mode and size, each link's target and the set of folders (empty ones included).
    struct Walk {
        var files: [String: (mode: Int, size: Int)] = [:]
        var links: [String: String] = [:]
        var folderPaths: Set<String> = []
        var folders: Int { folderPaths.count }
    }

    /// Documents and Application Support of `container`, by path relative to the container root.
    static func walk(_ container: MigrationDataContainer) throws -> Walk {
        var result = Walk()
        let root = container.containerRootDirectory.path(percentEncoded: false)
        for folder in ["Documents", "Library/Application Support"] {
            let base = root + "/" + folder
            guard let enumerator = FileManager.default.enumerator(atPath: base) else { continue }
            while let relative = enumerator.nextObject() as? String {
                let path = folder + "/" + relative
                let attributes = try FileManager.default.attributesOfItem(atPath: root + "/" + path)
                switch attributes[.type] as? FileAttributeType {
                case .typeRegular?:
                    result.files[path] = ((attributes[.posixPermissions] as? Int) ?? 0, (attributes[.size] as? Int) ?? 0)
                case .typeSymbolicLink?:
                    result.links[path] = try FileManager.default.destinationOfSymbolicLink(atPath: root + "/" + path)
                case .typeDirectory?:
                    result.folderPaths.insert(path)
                default:
                    continue
                }
            }
        }
        return result
    }

    /// How the containers differ, said so that the reader sees which file went wrong.
    struct Mismatch: Error, CustomStringConvertible {
        var description: String
    }

    /// Checks that `destination` holds exactly `source`'s files (bytes and modes), links and
    /// folders, blocking the calling thread while it reads them; stops with `CancellationError`
    /// once `cancellation` is set.
    static func compare(
        _ source: MigrationDataContainer, _ destination: MigrationDataContainer, cancellation: CancellationFlag
    ) throws -> (files: Int, links: Int, folders: Int) {
        let before = try walk(source)
        let after = try walk(destination)
        guard Set(before.files.keys) == Set(after.files.keys) else {
            let missing = Set(before.files.keys).symmetricDifference(after.files.keys).sorted().prefix(5)
            throw Mismatch(description: "the containers hold different files: \(missing.joined(separator: ", "))")
        }
        guard before.links == after.links else { throw Mismatch(description: "the links differ") }
        guard before.folderPaths == after.folderPaths else {
            let differing = before.folderPaths.symmetricDifference(after.folderPaths).sorted().prefix(5)
            throw Mismatch(description: "the folders differ: \(differing.joined(separator: ", "))")
        }
        let sourceRoot = source.containerRootDirectory.path(percentEncoded: false)
        let destinationRoot = destination.containerRootDirectory.path(percentEncoded: false)
        for (path, expected) in before.files.sorted(by: { $0.key < $1.key }) {
            if cancellation.isCancelled { throw CancellationError() }
            let found = after.files[path]!
            guard found.mode == expected.mode else {
                throw Mismatch(
                    description: "\(path): mode \(String(found.mode, radix: 8)), expected \(String(expected.mode, radix: 8))")
            }
            guard found.size == expected.size, try sameBytes(sourceRoot + "/" + path, destinationRoot + "/" + path) else {
                throw Mismatch(description: "\(path): the bytes differ")
            }
        }
        return (before.files.count, before.links.count, before.folders)
    }

    static func sameBytes(_ first: String, _ second: String) throws -> Bool {
        guard let a = FileHandle(forReadingAtPath: first), let b = FileHandle(forReadingAtPath: second) else {
            throw Mismatch(description: "cannot open \(first) or \(second)")
        }
        defer {
            try? a.close()
            try? b.close()
        }
        while true {
            let left = try a.read(upToCount: 1 << 20) ?? Data()
            let right = try b.read(upToCount: 1 << 20) ?? Data()
            guard left == right else { return false }
            if left.isEmpty { return true }
        }
    }
}
