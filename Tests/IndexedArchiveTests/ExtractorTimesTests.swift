import Foundation
import Tar
import TestSupport
import Testing

@testable import IndexedArchive

extension EngineSuites {
    /// `Extractor.restoreTimes(from:)`, the pass a stream or a salvage makes once the index has
    /// come: every member gets its nanoseconds, in one run or in runs on several threads.
    @Suite struct ExtractorTimesTests {
        /// A tree of `folders` folders of `files` files each, and the entries that give every
        /// path a time of its own (folders too), in archive order.
        static func tree(in root: String, folders: Int, files: Int) throws -> [ArchiveEntry] {
            var entries: [ArchiveEntry] = []
            func entry(_ path: String, _ kind: TarEntryKind, _ serial: Int) -> ArchiveEntry {
                ArchiveEntry(
                    path: path, kind: kind, size: 0, mode: 0o644, uid: 0, gid: 0,
                    mtime: TarTimestamp(seconds: 1_600_000_000 + Int64(serial), nanoseconds: UInt32(serial % 999_999_000 + 1)),
                    linkTarget: nil, headerOffset: 0, dataOffset: 0, checksum: nil, hasPaxHeader: false)
            }
            for folder in 0..<folders {
                let name = "d\(folder)"
                try FileManager.default.createDirectory(atPath: root + "/top/" + name, withIntermediateDirectories: true)
                entries.append(entry("top/\(name)/", .directory, entries.count))
                for file in 0..<files {
                    let path = "top/\(name)/f\(file)"
                    #expect(FileManager.default.createFile(atPath: root + "/" + path, contents: nil))
                    entries.append(entry(path, .regular, entries.count))
                }
            }
            return entries
        }

        static func mtime(_ path: String) -> [Int] {
            var info = stat()
            guard lstat(path, &info) == 0 else { return [] }
            return [info.st_mtim.tv_sec, info.st_mtim.tv_nsec]
        }

        /// Enough entries for several runs (the threshold is per thread), and one thread only: the
        /// same times either way, every one of them.
        @Test(arguments: [1, 2, 3])
        func everyMemberGetsItsTime(parallelism: Int) throws {
            let dir = try TemporaryDirectory()
            let root = dir.path + "/out"
            let entries = try Self.tree(in: root, folders: 30, files: 3 * Extractor.entriesPerTimeRun / 30 + 7)
            #expect(entries.count / Extractor.entriesPerTimeRun >= 3, "enough for three runs")
            var options = ExtractOptions()
            options.parallelism = parallelism
            let extractor = try Extractor(destination: root, options: options, archiveSize: 0)
            extractor.restoreTimes(from: entries)
            var wrong: [String] = []
            for entry in entries {
                let want = [Int(entry.mtime.seconds), Int(entry.mtime.nanoseconds)]
                if Self.mtime(root + "/" + entry.path) != want { wrong.append(entry.path) }
            }
            #expect(wrong.isEmpty, "\(wrong.count) of \(entries.count) without their time, e.g. \(wrong.prefix(3))")
        }

        /// A symbolic link member gets its own time, nanoseconds included; its target keeps its own.
        @Test func aSymbolicLinkGetsItsOwnTime() throws {
            let dir = try TemporaryDirectory()
            let root = dir.path + "/out"
            var entries = try Self.tree(in: root, folders: 1, files: 1)
            try FileManager.default.createSymbolicLink(atPath: root + "/top/d0/link", withDestinationPath: "f0")
            let target = Self.mtime(root + "/top/d0/f0")
            var link = entries[1].renamed("top/d0/link")
            link.kind = .symbolicLink
            link.mtime = TarTimestamp(seconds: 1_500_000_000, nanoseconds: 123_456_789)
            entries = [link]
            let extractor = try Extractor(destination: root, options: ExtractOptions(), archiveSize: 0)
            extractor.restoreTimes(from: entries)
            #expect(Self.mtime(root + "/top/d0/link") == [1_500_000_000, 123_456_789])
            #expect(Self.mtime(root + "/top/d0/f0") == target, "the link's time went to its target")
        }

        /// Stripped names, a member that is not there and a symbolic link in the way: each run
        /// skips what it cannot reach, never follows a link, and sets the rest.
        @Test func stripsSkipsAndNeverFollowsALink() throws {
            let dir = try TemporaryDirectory()
            let root = dir.path + "/out"
            var entries = try Self.tree(in: root, folders: 4, files: Extractor.entriesPerTimeRun)
            let outside = dir.path + "/outside"
            try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
            #expect(FileManager.default.createFile(atPath: outside + "/victim", contents: nil))
            let before = Self.mtime(outside + "/victim")
            try FileManager.default.createSymbolicLink(atPath: root + "/top/link", withDestinationPath: outside)
            entries.insert(entries[1].renamed("top/link/victim"), at: entries.count / 2)
            entries.insert(entries[1].renamed("top/missing/file"), at: entries.count / 3)
            entries = entries.map { $0.renamed("strip/" + $0.path) }
            var options = ExtractOptions()
            options.stripComponents = 1
            options.parallelism = 2
            let extractor = try Extractor(destination: root, options: options, archiveSize: 0)
            extractor.restoreTimes(from: entries)
            #expect(Self.mtime(outside + "/victim") == before, "the time went through the link")
            for entry in entries where !entry.path.contains("link/") && !entry.path.contains("missing/") {
                let path = root + "/" + entry.path.dropFirst("strip/".count)
                #expect(Self.mtime(path) == [Int(entry.mtime.seconds), Int(entry.mtime.nanoseconds)], "\(path)")
            }
        }
    }
}

extension ArchiveEntry {
    fileprivate func renamed(_ path: String) -> ArchiveEntry {
        var copy = self
        copy.path = path
        return copy
    }
}
