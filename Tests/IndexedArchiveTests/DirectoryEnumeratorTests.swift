import Foundation
import Tar
import TestSupport
import Testing

@testable import IndexedArchive

extension EngineSuites {
    @Suite struct DirectoryEnumeratorTests {
        static func walk(
            _ sources: [PackSource], unreadable: PackOptions.Tolerance = .fail, batchSize: Int = 256,
            fileSystem: FileSystem? = nil, order: WalkOrder = .name
        ) async throws -> (entries: [EnumeratedEntry], warnings: [PackWarning], batches: [Int]) {
            var enumerator =
                fileSystem.map {
                    DirectoryEnumerator(
                        sources: sources, unreadable: unreadable, batchSize: batchSize, pool: nil, fileSystem: $0, watchdog: nil)
                } ?? DirectoryEnumerator(sources: sources, unreadable: unreadable, batchSize: batchSize)
            enumerator.order = order
            var entries: [EnumeratedEntry] = []
            var warnings: [PackWarning] = []
            var batches: [Int] = []
            for try await batch in enumerator {
                entries += batch.entries
                warnings += batch.warnings
                batches.append(batch.entries.count)
            }
            return (entries, warnings, batches)
        }

        /// Threads of this process, as the kernel counts them.
        static func threadCount() -> Int {
            (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? 0
        }

        @Test(.enabled(if: FileManager.default.fileExists(atPath: "/proc/self/task")))
        func breakingOutOfTheLoopReleasesItsThread() async throws {
            let dir = try TemporaryDirectory()
            for i in 0..<3 { try dir.file("src/f\(i).txt", "x") }
            let before = Self.threadCount()
            for _ in 0..<1000 {
                for try await batch in DirectoryEnumerator(sources: [PackSource(path: dir.path + "/src")], batchSize: 1) {
                    _ = batch
                    break
                }
            }
            // The released pools' threads exit on their own; give them a moment.
            var after = Self.threadCount()
            for _ in 0..<200 where after > before + 8 {
                try await Task.sleep(for: .milliseconds(20))
                after = Self.threadCount()
            }
            #expect(after <= before + 8, "threads: \(before) before, \(after) after 1,000 early breaks")
        }

        @Test func theOrderIsDepthFirstAndBytewiseSorted() async throws {
            let dir = try TemporaryDirectory()
            for name in ["b", "a", "B", "a.b", "a-b", "ä", "dir2", "dir/z", "dir/y", "dir/sub/x", "Z"] {
                try dir.file("root/" + name, name)
            }
            let (entries, warnings, _) = try await Self.walk([PackSource(path: dir.path + "/root", archivePath: "r")])
            #expect(warnings.isEmpty)
            #expect(
                entries.map(\.archivePath) == [
                    "r", "r/B", "r/Z", "r/a", "r/a-b", "r/a.b", "r/b", "r/dir", "r/dir/sub",
                    "r/dir/sub/x", "r/dir/y", "r/dir/z", "r/dir2", "r/ä"
                ])
            #expect(entries.map(\.sourcePath).allSatisfy { $0.hasPrefix(dir.path + "/root") })
            let a = try #require(entries.first { $0.archivePath == "r/a-b" })
            #expect(a.kind == .regular && a.size == 3 && a.mode == 0o644)
            #expect(entries.first?.kind == .directory)
        }

        @Test func byTypeEachFolderIsGroupedByExtensionAndItsMembersFollowIt() async throws {
            let dir = try TemporaryDirectory()
            for name in ["b.txt", "a.md", "a.txt", "dir.d/y.h", "dir.d/x.c", "dir.d/w.h", "Makefile", "z.c"] {
                try dir.file("root/" + name, name)
            }
            let (entries, warnings, _) = try await Self.walk(
                [PackSource(path: dir.path + "/root", archivePath: "r")], batchSize: 3, order: .type)
            #expect(warnings.isEmpty)
            #expect(
                entries.map(\.archivePath) == [
                    "r", "r/Makefile", "r/z.c", "r/dir.d", "r/dir.d/x.c", "r/dir.d/w.h", "r/dir.d/y.h", "r/a.md", "r/a.txt",
                    "r/b.txt"
                ])
        }

        @Test func batchesHoldAtMostTheirSizeAndLoseNothing() async throws {
            let dir = try TemporaryDirectory()
            for i in 0..<25 { try dir.file("root/d\(i % 3)/f\(i)", "") }
            let whole = try await Self.walk([PackSource(path: dir.path + "/root")])
            let small = try await Self.walk([PackSource(path: dir.path + "/root")], batchSize: 4)
            #expect(whole.entries.count == 29)
            #expect(small.entries == whole.entries)
            #expect(small.batches.allSatisfy { $0 <= 4 })
            #expect(small.batches.count >= 8)
        }

        @Test func fifosAndSocketsAreSkippedWithWarnings() async throws {
            let dir = try TemporaryDirectory()
            try dir.file("root/file.txt", "x")
            #expect(mkfifo(dir.path + "/root/fifo", 0o644) == 0)
            let socketPath = dir.path + "/root/sock"
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(fd) }
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                for (i, byte) in socketPath.utf8.enumerated() where i < raw.count - 1 { raw[i] = byte }
            }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            #expect(bound == 0, "bind a unix socket")
            let (entries, warnings, _) = try await Self.walk([PackSource(path: dir.path + "/root", archivePath: "r")])
            #expect(entries.map(\.archivePath) == ["r", "r/file.txt"])
            #expect(warnings.map(\.path).sorted() == [dir.path + "/root/fifo", socketPath])
            #expect(warnings.allSatisfy { $0.message.contains("skipped") })
        }

        @Test func symlinksAreStoredNotFollowed() async throws {
            let dir = try TemporaryDirectory()
            try dir.file("elsewhere/secret.txt", "not in the archive")
            try dir.file("root/a.txt", "a")
            symlink(dir.path + "/elsewhere", dir.path + "/root/link-to-dir")
            symlink("a.txt", dir.path + "/root/link-to-file")
            symlink(dir.path + "/elsewhere", dir.path + "/rootlink")
            let (entries, _, _) = try await Self.walk([
                PackSource(path: dir.path + "/root", archivePath: "r"),
                PackSource(path: dir.path + "/rootlink", archivePath: "l")
            ])
            #expect(entries.map(\.archivePath) == ["r", "r/a.txt", "r/link-to-dir", "r/link-to-file", "l"])
            let link = try #require(entries.first { $0.archivePath == "r/link-to-dir" })
            #expect(link.kind == .symbolicLink)
            #expect(link.linkTarget == dir.path + "/elsewhere")
            #expect(link.size == 0)
            #expect(entries.last?.kind == .symbolicLink, "a root that is a link is stored as the link")
        }

        @Test func hardLinksShareAnIdentity() async throws {
            let dir = try TemporaryDirectory()
            try dir.file("root/one", "same")
            link(dir.path + "/root/one", dir.path + "/root/two")
            let (entries, _, _) = try await Self.walk([PackSource(path: dir.path + "/root")])
            let one = try #require(entries.first { $0.archivePath == "root/one" })
            let two = try #require(entries.first { $0.archivePath == "root/two" })
            #expect(one.inode == two.inode && one.device == two.device)
            #expect(one.linkCount == 2)
        }

        @Test func aMissingRootIsAnErrorEvenWhenWarning() async throws {
            let dir = try TemporaryDirectory()
            for tolerance in [PackOptions.Tolerance.fail, .warn] {
                let error = await expectArchiveError("missing root") {
                    try await Self.walk([PackSource(path: dir.path + "/none")], unreadable: tolerance)
                }
                #expect(error?.code == .io(errno: ENOENT))
                #expect(error?.path == dir.path + "/none")
            }
        }

        @Test func anUnsafeArchivePathIsRefused() async throws {
            let dir = try TemporaryDirectory()
            try dir.file("root/a", "a")
            let error = await expectArchiveError("..") { try await Self.walk([PackSource(path: dir.path + "/root", archivePath: "../x")]) }
            #expect(error?.code == .invalidArchivePath)
        }

        /// A file system whose listing of `dir/root/locked` and reads of files in it fail with EACCES,
        /// as chmod 000 would for a non-root user (these tests run as root, which reads anything).
        static func lockedFileSystem(_ locked: String) -> FileSystem {
            var fs = FileSystem.system
            fs.listDirectory = { path in
                if path == locked { throw ArchiveError(.io(errno: EACCES), "open failed: Permission denied", path: path) }
                return try FileSystem.system.listDirectory(path)
            }
            return fs
        }

        /// A name listed and then gone (removed between the listing and its `lstat`) is left out
        /// with a warning, with either tolerance: it is no longer there to store.
        @Test(arguments: [PackOptions.Tolerance.fail, .warn])
        func aFileRemovedAfterTheListingIsAWarning(_ unreadable: PackOptions.Tolerance) async throws {
            let dir = try TemporaryDirectory()
            try dir.file("root/here.txt", "here")
            let root = dir.path + "/root"
            var fs = FileSystem.system
            fs.listDirectory = { path in try FileSystem.system.listDirectory(path) + (path == root ? ["gone.txt"] : []) }
            let (entries, warnings, _) = try await Self.walk([PackSource(path: root)], unreadable: unreadable, fileSystem: fs)
            #expect(entries.map(\.archivePath) == ["root", "root/here.txt"])
            #expect(warnings.map(\.path) == [root + "/gone.txt"])
            #expect(warnings.first?.message == "removed before it could be read")
        }

        @Test func anUnreadableDirectoryFailsOrIsSkippedWithAWarning() async throws {
            let dir = try TemporaryDirectory()
            try dir.file("root/locked/inside.txt", "hidden")
            try dir.file("root/open.txt", "visible")
            let locked = dir.path + "/root/locked"
            let fs = Self.lockedFileSystem(locked)
            let error = await expectArchiveError("fail") {
                try await Self.walk([PackSource(path: dir.path + "/root")], unreadable: .fail, fileSystem: fs)
            }
            #expect(error?.code == .io(errno: EACCES))
            #expect(error?.path == locked)

            let (entries, warnings, _) = try await Self.walk([PackSource(path: dir.path + "/root")], unreadable: .warn, fileSystem: fs)
            #expect(entries.map(\.archivePath) == ["root", "root/open.txt"])
            #expect(warnings.map(\.path) == [locked])
        }

        @Test(.enabled(if: !runningAsRoot, "root reads a chmod 000 directory anyway"))
        func aChmod000DirectoryIsUnreadable() async throws {
            let dir = try TemporaryDirectory()
            try dir.file("root/locked/inside.txt", "hidden")
            chmod(dir.path + "/root/locked", 0)
            defer { chmod(dir.path + "/root/locked", 0o755) }
            let (entries, warnings, _) = try await Self.walk([PackSource(path: dir.path + "/root")], unreadable: .warn)
            #expect(entries.map(\.archivePath) == ["root"])
            #expect(warnings.count == 1)
        }

        @Test func aFileRemovedDuringTheWalkIsAWarningNotAnError() async throws {
            let dir = try TemporaryDirectory()
            try dir.file("root/a.txt", "a")
            try dir.file("root/gone.txt", "b")
            // The listing still names gone.txt, but it has vanished before its lstat.
            var fs = FileSystem.system
            fs.lstat = { path in
                if path.hasSuffix("/gone.txt") { throw ArchiveError(.io(errno: ENOENT), "stat failed", path: path) }
                return try FileSystem.system.lstat(path)
            }
            let (entries, warnings, _) = try await Self.walk([PackSource(path: dir.path + "/root")], unreadable: .fail, fileSystem: fs)
            #expect(entries.map(\.archivePath) == ["root", "root/a.txt"])
            #expect(warnings.map(\.path) == [dir.path + "/root/gone.txt"])
        }
    }
}
