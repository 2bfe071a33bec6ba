import CPlatform
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
        /// path a time of its own (folders too), in archive order. Each path has its entry's whole
        /// seconds, as the extraction leaves it from the tar header.
        static func tree(in root: String, folders: Int, files: Int) throws -> [ArchiveEntry] {
            let entries = try unstampedTree(in: root, folders: folders, files: files)
            for entry in entries { Self.setTime(root + "/" + entry.path, seconds: Int(entry.mtime.seconds)) }
            return entries
        }

        static func setTime(_ path: String, seconds: Int, nanoseconds: Int = 0) {
            var times = [timespec(tv_sec: seconds, tv_nsec: nanoseconds), timespec(tv_sec: seconds, tv_nsec: nanoseconds)]
            #expect(utimensat(AT_FDCWD, path, &times, AT_SYMLINK_NOFOLLOW) == 0)
        }

        private static func unstampedTree(in root: String, folders: Int, files: Int) throws -> [ArchiveEntry] {
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
            Self.setTime(root + "/top/d0/link", seconds: 1_500_000_000)
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

extension EngineSuites.ExtractorTimesTests {
    /// The times come once the whole stream has been read, by name, and the files have been
    /// there all along: someone who may write in the destination can put a hard link to a file
    /// elsewhere in the place of one, or a file where a folder was. Only what is as the
    /// extraction left it (its kind, its header's whole seconds) gets its time; the file
    /// elsewhere kept the member's time before.
    @Test func aMemberSwappedMeanwhileGetsNoTime() throws {
        let dir = try TemporaryDirectory()
        let root = dir.path + "/out"
        let entries = try Self.tree(in: root, folders: 2, files: 3)
        let outside = dir.path + "/victim"
        #expect(FileManager.default.createFile(atPath: outside, contents: Data("mine".utf8)))
        Self.setTime(outside, seconds: 1_000_000_000, nanoseconds: 5)
        try FileManager.default.removeItem(atPath: root + "/top/d0/f1")
        #expect(link(outside, root + "/top/d0/f1") == 0)
        // The outside file with the member's very seconds is left alone too: it is not a folder.
        try FileManager.default.removeItem(atPath: root + "/top/d1")
        #expect(FileManager.default.createFile(atPath: root + "/top/d1", contents: nil))
        Self.setTime(root + "/top/d1", seconds: Int(entries[4].mtime.seconds))
        // Its folder as the extraction left it, the swap inside it aside.
        Self.setTime(root + "/top/d0", seconds: Int(entries[0].mtime.seconds))
        let extractor = try Extractor(destination: root, options: ExtractOptions(), archiveSize: 0)
        extractor.restoreTimes(from: entries)
        #expect(Self.mtime(outside) == [1_000_000_000, 5], "the time went to a file outside the destination")
        #expect(Self.mtime(root + "/top/d1") == [Int(entries[4].mtime.seconds), 0], "a file where the folder was")
        for entry in entries where entry.path != "top/d0/f1" && !entry.path.hasPrefix("top/d1") {
            #expect(Self.mtime(root + "/" + entry.path) == [Int(entry.mtime.seconds), Int(entry.mtime.nanoseconds)], "\(entry.path)")
        }
    }

    /// A link's owner and times go through a descriptor of the link itself: a file swapped in
    /// under its name after the descriptor was opened does not get them (the extraction of a
    /// symbolic link member once set them by name, and a hard link to a file elsewhere, swapped
    /// in between, got the archive's owner as root restored it).
    @Test(.enabled(if: amk_o_path() != 0, "O_PATH is Linux's")) func timesGoToTheDescriptorNotTheName() throws {
        let dir = try TemporaryDirectory()
        let folder = dir.path + "/d"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: folder + "/l", withDestinationPath: "nowhere")
        let outside = dir.path + "/victim"
        #expect(FileManager.default.createFile(atPath: outside, contents: nil))
        Self.setTime(outside, seconds: 1_000_000_000)
        let parent = open(folder, O_RDONLY | O_DIRECTORY)
        defer { close(parent) }
        let item = Extractor.openItself("l", in: parent)
        try #require(item >= 0)
        defer { close(item) }
        #expect(rename(folder + "/l", folder + "/moved") == 0)
        #expect(link(outside, folder + "/l") == 0)
        var times = [timespec(tv_sec: 1_234_567_890, tv_nsec: 42), timespec(tv_sec: 1_234_567_890, tv_nsec: 42)]
        Extractor.setTimes(&times, of: item, named: "l", in: parent)
        #expect(Self.mtime(outside) == [1_000_000_000, 0])
        #expect(Self.mtime(folder + "/moved") == [1_234_567_890, 42], "the link itself")
    }
}

extension ArchiveEntry {
    fileprivate func renamed(_ path: String) -> ArchiveEntry {
        var copy = self
        copy.path = path
        return copy
    }
}
