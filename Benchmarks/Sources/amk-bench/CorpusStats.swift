import Foundation

/// What a tree holds: its regular files (with sizes), folders and bytes.
struct CorpusStats: Sendable {
    /// Regular files, as `/`-separated paths relative to the tree's parent (the archive names:
    /// `appdata/Library/...`), sorted, with their sizes.
    var files: [String: Int]
    var directories: Int
    var symlinks: Int
    var contentBytes: Int

    /// Walks `root` without following symlinks; paths are prefixed with `prefix/`.
    init(root: String, prefix: String) throws {
        files = [:]
        directories = 0
        symlinks = 0
        contentBytes = 0
        guard let walker = FileManager.default.enumerator(atPath: root) else {
            throw BenchError("cannot walk \(root)")
        }
        while let relative = walker.nextObject() as? String {
            let attributes = walker.fileAttributes ?? [:]
            switch attributes[.type] as? FileAttributeType {
            case .typeRegular?:
                let size = (attributes[.size] as? NSNumber)?.intValue ?? 0
                files["\(prefix)/\(relative)"] = size
                contentBytes += size
            case .typeDirectory?: directories += 1
            case .typeSymbolicLink?: symlinks += 1
            default: break
            }
        }
    }

    /// `count` members spread evenly over the sorted names, for one-member extraction: early,
    /// middle and late members sit in different blocks.
    func sampleMembers(_ count: Int) -> [String] {
        let names = files.keys.sorted()
        let count = min(count, names.count)
        guard count > 0 else { return [] }
        // The middle of each of `count` equal slices.
        let picked = (0..<count).map { names[($0 * names.count + names.count / 2) / count] }
        return Array(Set(picked)).sorted()
    }
}
