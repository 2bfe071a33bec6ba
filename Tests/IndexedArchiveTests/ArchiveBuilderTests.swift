import Foundation
import Synchronization
import Tar
import TestSupport
import Testing

@testable import IndexedArchive

extension EngineSuites {
    @Suite struct ArchiveBuilderTests {
        struct Refusal: Error, Equatable {}
        struct CompressionFailure: Error, Equatable {}

        @Test func appendsFromTheBodyLandInOrderAndTheResultIsReturned() async throws {
            let dir = try TemporaryDirectory()
            try dir.file("one/a.txt", "a")
            try dir.file("two/b.txt", "b")
            let archive = dir.path + "/b.tar.xz"
            let (count, summary) = try await ArchivePacker.withBuilder(to: .file(archive), options: testOptions()) { builder in
                try await builder.append(PackSource(path: dir.path + "/two", archivePath: "second"))
                try await builder.append(PackSource(path: dir.path + "/one", archivePath: "first"))
                return await builder.entryCount
            }
            #expect(count == 4)
            #expect(summary.entries == 4)
            let paths = try await ArchiveReader(path: archive).entries().map(\.path)
            #expect(paths == ["second/", "second/b.txt", "first/", "first/a.txt"])
        }

        /// The system reads a path up to its first NUL: `one/..\0` named `one/..`, whose walk
        /// met the same folders inside themselves without end. Refused before anything is read,
        /// and the archive goes on.
        @Test(arguments: ["/one/..\u{0}", "/one/a.txt\u{0}", "/one\u{0}/a.txt"])
        func aSourcePathHoldingANULIsRefused(suffix: String) async throws {
            let dir = try TemporaryDirectory()
            try dir.file("one/a.txt", "a")
            let archive = dir.path + "/n.tar.xz"
            let count = try await ArchivePacker.withBuilder(to: .file(archive), options: testOptions()) { builder in
                let error = await #expect(throws: ArchiveError.self) {
                    try await builder.append(PackSource(path: dir.path + suffix, archivePath: "x"))
                }
                #expect(error?.code == .io(errno: EINVAL) && error?.message.contains("NUL") == true, "\(String(describing: error))")
                try await builder.append(PackSource(path: dir.path + "/one", archivePath: "one"))
                return await builder.entryCount
            }
            #expect(count.result == 2)
        }

        /// Members that no system could extract together are refused as they are appended, and
        /// the archive goes on: a member under one that is not a folder, one that is not a folder
        /// where others lie under it, and a name component longer than a file name can be. Each
        /// was stored, and amk, GNU tar and bsdtar refused to extract the archive.
        @Test func membersNoSystemCouldExtractTogetherAreRefused() async throws {
            let dir = try TemporaryDirectory()
            try dir.file("one/a.txt", "a")
            try dir.file("file.txt", "f")
            let archive = dir.path + "/c.tar.xz"
            let long = String(repeating: "z", count: 256)
            _ = try await ArchivePacker.withBuilder(to: .file(archive), options: testOptions()) { builder in
                try await builder.append(PackSource(path: dir.path + "/file.txt", archivePath: "docs/n"))
                try await builder.append(PackSource(path: dir.path + "/one", archivePath: "tree"))
                for (archivePath, says) in [
                    ("docs/n/child", "'docs/n' is already in the archive and is not a folder"),
                    ("docs/n/deeper/child", "'docs/n' is already in the archive and is not a folder"),
                    ("tree", "already in the archive"),
                    ("docs", "already holds members under 'docs'"),
                    ("tree/\(long)", "a name component of 256 bytes is longer than the 255 bytes"),
                    ("\(long)/x", "a name component of 256 bytes is longer than the 255 bytes")
                ] {
                    let error = await #expect(throws: ArchiveError.self, "\(archivePath)") {
                        try await builder.append(PackSource(path: dir.path + "/file.txt", archivePath: archivePath))
                    }
                    #expect(error?.code == .invalidArchivePath && error?.message.contains(says) == true, "\(String(describing: error))")
                }
                // What stock tools take: a file beside the others, under a folder stored before,
                // and a name component of 255 bytes.
                try await builder.append(PackSource(path: dir.path + "/file.txt", archivePath: "docs/m"))
                try await builder.append(PackSource(path: dir.path + "/file.txt", archivePath: "tree/b.txt"))
                try await builder.append(PackSource(path: dir.path + "/file.txt", archivePath: "tree/" + String(long.dropFirst())))
            }
            let paths = try await ArchiveReader(path: archive).entries().map(\.path)
            #expect(paths.count == 6, "\(paths)")
            let out = dir.path + "/out"
            try await ArchiveReader(path: archive).extract(to: out)
            #expect(FileManager.default.fileExists(atPath: out + "/tree/" + String(long.dropFirst())))
        }

        /// A name that is not UTF-8 is measured in its bytes, as the file system measures it: a
        /// Latin-1 name of 64 to 255 bytes (each byte held as a 4-byte escape in the `String`)
        /// was refused as "256 bytes", and a whole legal tree with it, which GNU tar archives.
        @Test func aNameThatIsNotUTF8IsMeasuredInItsBytes() async throws {
            let dir = try TemporaryDirectory()
            try FileManager.default.createDirectory(atPath: dir.path + "/src", withIntermediateDirectories: true)
            let raw = Array("src/".utf8) + [UInt8](repeating: 0xE9, count: 200)
            let fd = (Array((dir.path + "/").utf8) + raw + [0]).withUnsafeBufferPointer { name in
                name.withMemoryRebound(to: CChar.self) { open($0.baseAddress!, O_CREAT | O_WRONLY, 0o644) }
            }
            try #require(fd >= 0 || errno == EILSEQ, "errno \(errno)")
            if fd < 0 { return }
            close(fd)
            let archive = dir.path + "/l.tar.xz"
            let summary = try await ArchivePacker.pack([PackSource(path: dir.path + "/src", archivePath: "src")], to: .file(archive))
            #expect(summary.entries == 2)
            let paths = try await ArchiveReader(path: archive).entries().map(\.path)
            #expect(paths.map(RawName.encode).contains(raw), "\(paths)")
        }

        /// A file that says it is empty and refuses to be read (`/proc/PID/attr/current`: EINVAL)
        /// is stored empty, as GNU tar stores it without reading: the probe for growth failed the
        /// whole pack with "read failed: Invalid argument".
        @Test(.enabled(if: Self.procAttrRefusesReading, "needs /proc/self/attr/current refusing read(2)"))
        func anEmptyFileThatRefusesReadingIsStoredEmpty() async throws {
            let dir = try TemporaryDirectory()
            let archive = dir.path + "/p.tar.xz"
            let summary = try await ArchivePacker.pack(
                [PackSource(path: "/proc/self/attr/current", archivePath: "current")], to: .file(archive))
            #expect(summary.entries == 1 && summary.warnings.isEmpty, "\(summary.warnings)")
            let entries = try await ArchiveReader(path: archive).entries()
            #expect(entries.map(\.path) == ["current"] && entries.first?.size == 0)
        }

        static var procAttrRefusesReading: Bool {
            let fd = open("/proc/self/attr/current", O_RDONLY)
            guard fd >= 0 else { return false }
            defer { close(fd) }
            var byte: UInt8 = 0
            var info = stat()
            return fstat(fd, &info) == 0 && info.st_size == 0 && read(fd, &byte, 1) < 0 && errno == EINVAL
        }

        @Test func concurrentAppendsDoNotInterleave() async throws {
            let dir = try TemporaryDirectory()
            try await offPool {
                for i in 0..<40 { try dir.file("one/f\(i).txt", sampleBytes(count: 20_000, seed: UInt64(i), text: true)) }
                for i in 0..<40 { try dir.file("two/g\(i).bin", sampleBytes(count: 30_000, seed: UInt64(100 + i), text: false)) }
            }
            let archive = dir.path + "/c.tar.xz"
            _ = try await ArchivePacker.withBuilder(to: .file(archive), options: testOptions()) { builder in
                async let one: Void = builder.append(PackSource(path: dir.path + "/one"))
                async let two: Void = builder.append(PackSource(path: dir.path + "/two"))
                _ = try await (one, two)
            }
            let reader = try ArchiveReader(path: archive)
            let paths = try await reader.entries().map(\.path)
            #expect(paths.count == 82)
            // Each source's members are contiguous: one append ran whole before the other.
            let firsts = paths.map { $0.hasPrefix("one") }
            #expect(zip(firsts, firsts.dropFirst()).filter { $0 != $1 }.count == 1)
            #expect(try await reader.verify() == 82)
            #expect(try await reader.contents(of: "two/g7.bin") == sampleBytes(count: 30_000, seed: 107, text: false))
        }

        @Test func aThrowingBodyAbandonsTheArchiveAndKeepsTheOldFile() async throws {
            let dir = try TemporaryDirectory()
            try dir.file("src/a.txt", "a")
            try dir.file("old.tar.xz", "the previous archive")
            let archive = dir.path + "/old.tar.xz"
            do {
                _ = try await ArchivePacker.withBuilder(to: .file(archive), options: testOptions()) { builder in
                    try await builder.append(PackSource(path: dir.path + "/src"))
                    throw Refusal()
                }
                Issue.record("withBuilder returned although its body threw")
            } catch {
                #expect(error as? Refusal == Refusal(), "the body's own error comes back: \(error)")
            }
            #expect(try await readBytes(archive) == Array("the previous archive".utf8))
            #expect(listing(dir.path) == ["old.tar.xz", "src"])
        }

        /// Options whose compression of block 0 waits until `until` says so (20 s at most), then
        /// throws ``CompressionFailure``.
        static func failingBlockZero(workers: Int = 2, until: @escaping @Sendable () -> Bool) -> PackOptions {
            var options = testOptions()
            options.workers = workers
            options.compressionHook = { sequence in
                guard sequence == 0 else { return }
                for _ in 0..<4000 where !until() { usleep(5000) }
                throw CompressionFailure()
            }
            return options
        }

        /// 2.5 chunks of 1 MiB: chunks go out one behind, so appending it hands block 0, and only
        /// it, to a compressor.
        static func twoAndAHalfChunks(in dir: TemporaryDirectory) async throws {
            try await offPool { try dir.file("src/big.txt", sampleBytes(count: 5 << 19, seed: 3, text: true)) }
        }

        /// With one compressor the pipeline waits for it when it fails; with two, for the next chunk.
        @Test(arguments: [1, 2])
        func aFailedCompressionCancelsABodyBusyWithItsOwnWork(workers: Int) async throws {
            let dir = try TemporaryDirectory()
            try await Self.twoAndAHalfChunks(in: dir)
            let busy = Mutex(false)
            let seenByBody = Mutex<String?>(nil)
            let options = Self.failingBlockZero(workers: workers, until: { busy.withLock { $0 } })
            let start = ContinuousClock.now
            let error = await #expect(throws: CompressionFailure.self, "the compression's own error, not a cancellation") {
                try await ArchivePacker.withBuilder(to: .file(dir.path + "/f.tar.xz"), options: options) { builder in
                    try await builder.append(PackSource(path: dir.path + "/src"))
                    // Not appending now: nothing the builder does would notice the failure.
                    busy.withLock { $0 = true }
                    do {
                        // Long, so that waiting for it cannot pass for a slow machine's answer.
                        try await Task.sleep(for: .seconds(120))
                    } catch {
                        seenByBody.withLock { $0 = "\(type(of: error))" }
                        throw error
                    }
                }
            }
            let elapsed = ContinuousClock.now - start
            #expect(error != nil)
            #expect(elapsed < .seconds(60), "the body was waited for instead of cancelled: \(elapsed)")
            #expect(seenByBody.withLock { $0 } == "CancellationError")
            #expect(listing(dir.path) == ["src"], "nothing is left at the destination: \(listing(dir.path))")
        }

        @Test func theBodysErrorWinsOverThePipelineItStops() async throws {
            let dir = try TemporaryDirectory()
            try await Self.twoAndAHalfChunks(in: dir)
            // Block 0 compresses until the test is over, then fails: the pack must neither wait
            // for it nor report the pipeline's end instead of the body's error.
            let over = Mutex(false)
            defer { over.withLock { $0 = true } }
            let options = Self.failingBlockZero(until: { over.withLock { $0 } })
            let start = ContinuousClock.now
            await #expect(throws: Refusal.self, "the body's own error, not the pipeline's") {
                try await ArchivePacker.withBuilder(to: .file(dir.path + "/f.tar.xz"), options: options) { builder in
                    try await builder.append(PackSource(path: dir.path + "/src"))
                    throw Refusal()
                }
            }
            let elapsed = ContinuousClock.now - start
            #expect(elapsed < .seconds(60), "the pack waited for a compression it had no use for: \(elapsed)")
            #expect(listing(dir.path) == ["src"], "nothing is left at the destination: \(listing(dir.path))")
        }

        @Test func theBuilderRefusesAppendsAfterTheArchiveIsFinished() async throws {
            let dir = try TemporaryDirectory()
            try dir.file("src/a.txt", "a")
            let (escaped, _) = try await ArchivePacker.withBuilder(to: .file(dir.path + "/f.tar.xz"), options: testOptions()) { $0 }
            let error = await expectArchiveError("append after finish") { try await escaped.append(PackSource(path: dir.path + "/src")) }
            #expect(error?.code == .invalidOptions)
        }

        /// An append that failed after storing part of its source (here a folder whose second
        /// file cannot be read) leaves a tar stream that may end mid-member: the builder refuses
        /// every append after it, with the same error, and the archive is abandoned.
        @Test func afterAFailedAppendTheBuilderRefusesMore() async throws {
            let dir = try TemporaryDirectory()
            try dir.file("src/a.txt", "a")
            try dir.file("src/b.txt", "b")
            try dir.file("other/c.txt", "c")
            let archive = dir.path + "/f.tar.xz"
            var options = testOptions()
            options.fileSystem = Self.denying([dir.path + "/src/b.txt"])
            let error = await expectArchiveError("pack after a failed append") {
                try await ArchivePacker.withBuilder(to: .file(archive), options: options) { builder in
                    do {
                        try await builder.append(PackSource(path: dir.path + "/src"))
                    } catch {
                        let again = await expectArchiveError("second append") {
                            try await builder.append(PackSource(path: dir.path + "/other"))
                        }
                        #expect(again?.code == .io(errno: EACCES))
                    }
                }
            }
            #expect(error?.code == .io(errno: EACCES))
            #expect(!exists(archive))
        }

        /// An append refused before any of it was stored (a name already in the archive, a file
        /// that does not exist) leaves the archive as it was: the caller may catch it and go on,
        /// and the archive holds what the other appends stored. A caught duplicate once failed
        /// every later append, and the export with it.
        @Test func anAppendRefusedBeforeStoringAnythingLeavesTheBuilderUsable() async throws {
            let dir = try TemporaryDirectory()
            try dir.file("a.txt", "a")
            try dir.file("b.txt", "b")
            let archive = dir.path + "/u.tar.xz"
            _ = try await ArchivePacker.withBuilder(to: .file(archive), options: testOptions()) { builder in
                try await builder.append(PackSource(path: dir.path + "/a.txt", archivePath: "x.txt"))
                let duplicate = await expectArchiveError("duplicate") {
                    try await builder.append(PackSource(path: dir.path + "/b.txt", archivePath: "x.txt"))
                }
                #expect(duplicate?.code == .invalidArchivePath)
                let missing = await expectArchiveError("missing") {
                    try await builder.append(PackSource(path: dir.path + "/missing.txt"))
                }
                #expect(missing?.code == .io(errno: ENOENT))
                try await builder.append(PackSource(path: dir.path + "/b.txt", archivePath: "y.txt"))
            }
            let reader = try ArchiveReader(path: archive)
            #expect(try await reader.entries().map(\.path) == ["x.txt", "y.txt"])
            #expect(try await reader.verify() == 2)
        }

        // MARK: - Faults while reading

        /// Reads of `victims` fail with EACCES, as chmod 000 would make them for a non-root user.
        static func denying(_ victims: Set<String>) -> FileSystem {
            var fs = FileSystem.system
            fs.openForReading = { path in
                if victims.contains(path) { throw ArchiveError(.io(errno: EACCES), "open failed: Permission denied", path: path) }
                return try FileSystem.system.openForReading(path)
            }
            return fs
        }

        /// The folder holding `name` is swapped for a link to a folder outside the tree just
        /// before `name` is opened (a race anyone who can write in the tree can run): the open
        /// goes through the link, and the pack once stored the outside file under the tree's
        /// name, exit 0. What the descriptor is open on must lie in the source: the pack fails
        /// naming the file, and writes nothing.
        @Test(arguments: ["small.txt", "large.bin"])
        func aFolderSwappedForALinkWhileThePackRunsIsNotFollowed(_ name: String) async throws {
            let dir = try TemporaryDirectory()
            try dir.file("src/a.txt", "a")
            try dir.file("src/d/" + name, name == "large.bin" ? Samples.noise1Point2M : Array("inside".utf8))
            try dir.file("outside/" + name, name == "large.bin" ? Samples.noise1Point2M.reversed() : Array("SECRET".utf8))
            let victim = dir.path + "/src/d/" + name
            let root = dir.path
            var fs = FileSystem.system
            fs.openForReading = { path in
                if path == victim, !FileManager.default.fileExists(atPath: root + "/moved") {
                    try FileManager.default.moveItem(atPath: root + "/src/d", toPath: root + "/moved")
                    try FileManager.default.createSymbolicLink(atPath: root + "/src/d", withDestinationPath: root + "/outside")
                }
                return try FileSystem.system.openForReading(path)
            }
            var options = testOptions()
            options.fileSystem = fs
            let archive = dir.path + "/s.tar.xz"
            let error = await expectArchiveError("swapped folder") {
                try await ArchivePacker.pack([PackSource(path: dir.path + "/src")], to: .file(archive), options: options)
            }
            #expect(error?.code == .unsafePath, "\(String(describing: error))")
            #expect(error?.path == victim)
            #expect(error?.message.contains("outside") == true, "\(error?.message ?? "")")
            #expect(!exists(archive))
        }

        @Test(arguments: ["small.txt", "large.bin"])
        func anUnreadableFileFailsThePackOrIsSkippedWithAWarning(_ name: String) async throws {
            let dir = try TemporaryDirectory()
            try dir.file("src/before.txt", "before")
            try dir.file("src/large.bin", Samples.noise1Point2M)  // read in slices, not whole
            try dir.file("src/small.txt", "small")
            try dir.file("src/z.txt", "after")
            let victim = dir.path + "/src/" + name
            var options = testOptions()
            options.fileSystem = Self.denying([victim])
            let archive = dir.path + "/u.tar.xz"
            let error = await expectArchiveError("unreadable \(name)") {
                try await ArchivePacker.pack([PackSource(path: dir.path + "/src")], to: .file(archive), options: options)
            }
            #expect(error?.code == .io(errno: EACCES))
            #expect(error?.path == victim)
            #expect(!exists(archive))

            options.unreadable = .warn
            let summary = try await ArchivePacker.pack([PackSource(path: dir.path + "/src")], to: .file(archive), options: options)
            #expect(summary.warnings.map(\.path) == [victim])
            let reader = try ArchiveReader(path: archive)
            let paths = try await reader.entries().map(\.path)
            #expect(!paths.contains("src/" + name))
            #expect(paths.count == 4)
            #expect(try await reader.verify() == 4)
        }

        /// A folder `src` of a file read whole (`small.txt`) and one read in slices (`large.bin`),
        /// and the path of the one named `victim`.
        static func smallAndLarge(victim: String) throws -> (TemporaryDirectory, String) {
            let dir = try TemporaryDirectory()
            try dir.file("src/large.bin", Samples.noise1Point2M)
            try dir.file("src/small.txt", "small")
            return (dir, dir.path + "/src/" + victim)
        }

        /// `victim` is removed just before it is opened, as if deleted after the walk listed it.
        static func removedBeforeOpen(_ victim: String) -> FileSystem {
            var fs = FileSystem.system
            fs.openForReading = { path in
                if path == victim { unlink(path) }
                return try FileSystem.system.openForReading(path)
            }
            return fs
        }

        /// `victim` is replaced just before it is opened, as `how` says: by a folder, by a link, or
        /// its folder by a file.
        static func replacedBeforeOpen(_ victim: String, by how: String) -> FileSystem {
            var fs = FileSystem.system
            fs.openForReading = { path in
                if path == victim {
                    unlink(path)
                    switch how {
                    case "folder": mkdir(path, 0o755)
                    case "link": symlink("small.txt", path)
                    default:
                        let folder = String(path[..<path.lastIndex(of: "/")!])
                        rename(folder, folder + ".gone")
                        _ = FileManager.default.createFile(atPath: folder, contents: Data("now a file".utf8))
                    }
                }
                return try FileSystem.system.openForReading(path)
            }
            return fs
        }

        /// A file replaced between the listing and its reading (by a folder, by a link, or its
        /// folder by a file) failed the pack even with changes allowed, blaming a link loop or a
        /// missing folder: it is a change of the tree, which `--allow-changes` allows with a
        /// warning, and which without it fails the pack saying so.
        @Test(arguments: ["folder", "link", "parent"], ["small.txt", "large.bin"])
        func aFileReplacedBeforeItIsReadIsAChange(_ how: String, _ name: String) async throws {
            let dir = try TemporaryDirectory()
            try dir.file("src/sub/large.bin", Samples.noise1Point2M)
            try dir.file("src/sub/small.txt", "small")
            try dir.file("src/top.txt", "top")
            let victim = dir.path + "/src/sub/" + name
            var options = testOptions()
            options.fileSystem = Self.replacedBeforeOpen(victim, by: how)
            let archive = dir.path + "/r.tar.xz"
            let refused = await expectArchiveError("replaced, changes not allowed") {
                try await ArchivePacker.pack([PackSource(path: dir.path + "/src")], to: .file(archive), options: options)
            }
            #expect(refused?.code == .changedWhileReading, "\(String(describing: refused))")
            #expect(refused?.message.contains("allow changes") == true, "\(String(describing: refused))")
            // Put back, and packed again with changes allowed.
            if how == "parent" {
                unlink(dir.path + "/src/sub")
                rename(dir.path + "/src/sub.gone", dir.path + "/src/sub")
            } else {
                _ = try? FileManager.default.removeItem(atPath: victim)
            }
            try dir.file("src/sub/" + name, name == "large.bin" ? Samples.noise1Point2M : Array("small".utf8))
            options.changedWhileReading = .warn
            let summary = try await ArchivePacker.pack([PackSource(path: dir.path + "/src")], to: .file(archive), options: options)
            // A folder replaced takes the other file in it along, if it is read after the victim.
            #expect(summary.warnings.map(\.path).contains(victim), "\(summary.warnings)")
            #expect(how == "parent" || summary.warnings.count == 1, "\(summary.warnings)")
            #expect(summary.warnings.allSatisfy { $0.message.contains("was replaced") }, "\(summary.warnings)")
            let reader = try ArchiveReader(path: archive)
            #expect(try await reader.entries().contains { $0.path == "src/top.txt" })
            _ = try await reader.verify()
        }

        /// A file removed between the listing and its reading is no longer there to store: it is
        /// left out with a warning, with no tolerance set. A large file (read in slices) failed
        /// the pack with "open failed".
        @Test(arguments: ["small.txt", "large.bin"])
        func aFileRemovedBeforeItIsReadIsLeftOutWithAWarning(_ name: String) async throws {
            let (dir, victim) = try Self.smallAndLarge(victim: name)
            var options = testOptions()
            options.fileSystem = Self.removedBeforeOpen(victim)
            let archive = dir.path + "/r.tar.xz"
            let summary = try await ArchivePacker.pack([PackSource(path: dir.path + "/src")], to: .file(archive), options: options)
            #expect(summary.warnings.map(\.path) == [victim])
            #expect(summary.warnings.first?.message == "removed before it could be read")
            let reader = try ArchiveReader(path: archive)
            let paths = try await reader.entries().map(\.path)
            #expect(!paths.contains("src/" + name))
            #expect(try await reader.verify() == 2)
        }

        /// `fstat` reports `delta` bytes more than the file holds, as if it changed between the
        /// size check and the read.
        static func misreporting(_ victim: String, by delta: Int) -> FileSystem {
            var fs = FileSystem.system
            fs.fstat = { fd, path in
                var info = try FileSystem.system.fstat(fd, path)
                if path == victim { info.st_size += delta }
                return info
            }
            return fs
        }

        @Test(arguments: [("small.txt", 10), ("small.txt", -3), ("large.bin", 1000), ("large.bin", -1000)])
        func aFileThatChangesWhileReadFailsOrIsStoredAtItsHeaderSize(_ name: String, _ delta: Int) async throws {
            let dir = try TemporaryDirectory()
            let original = name == "large.bin" ? Samples.noise1Point2M : Array("small content".utf8)
            try dir.file("src/" + name, original)
            let victim = dir.path + "/src/" + name
            var options = testOptions()
            options.fileSystem = Self.misreporting(victim, by: delta)
            let archive = dir.path + "/c.tar.xz"
            let error = await expectArchiveError("\(name) \(delta)") {
                try await ArchivePacker.pack([PackSource(path: dir.path + "/src")], to: .file(archive), options: options)
            }
            #expect(error?.code == .changedWhileReading)
            #expect(error?.path == victim)
            // Nothing was stored: the message says how it could have been, not what was.
            #expect(
                error?.message.contains("--allow-changes") == true && error?.message.contains("stored") == false,
                "\(String(describing: error))")
            #expect(!exists(archive))

            options.changedWhileReading = .warn
            let summary = try await ArchivePacker.pack([PackSource(path: dir.path + "/src")], to: .file(archive), options: options)
            #expect(summary.warnings.map(\.path) == [victim])
            let told = summary.warnings.first?.message ?? ""
            #expect(told.contains(delta > 0 ? "stored as zeros" : "are stored") && !told.contains("--allow-changes"), "\(told)")
            if delta > 0 && name == "large.bin" {
                // A file read in slices: what it had and what was read, not what was read said as its size ("shrank
                // to 4194304 bytes" of a file cut to nothing).
                #expect(told.contains("it had \(original.count + delta) bytes, \(original.count) were read before it ended"), "\(told)")
            }
            let reader = try ArchiveReader(path: archive)
            #expect(try await reader.verify() == 2)
            let stored = try await reader.contents(of: "src/" + name)
            // The header's size rules: cut when the file grew, padded with zeros when it shrank.
            let expected = delta > 0 ? original + [UInt8](repeating: 0, count: delta) : Array(original.dropLast(-delta))
            #expect(stored == expected)
        }

        /// `fstat` reports a later modification time from its second call on for `victim`, as if
        /// the file were written in place while it was read; with `keepingItsTime`, only a later
        /// change time, as if the writer then set the modification time back (`touch -r`).
        static func rewrittenWhileRead(_ victim: String, keepingItsTime: Bool = false) -> FileSystem {
            let calls = Mutex(0)
            var fs = FileSystem.system
            fs.fstat = { fd, path in
                var info = try FileSystem.system.fstat(fd, path)
                if path == victim,
                    calls.withLock({ count in
                        count += 1
                        return count
                    }) > 1
                {
                    if keepingItsTime {
                        info.st_ctim.tv_nsec = (info.st_ctim.tv_nsec + 1) % 1_000_000_000
                    } else {
                        info.st_mtim.tv_sec += 1
                    }
                }
                return info
            }
            return fs
        }

        /// A file rewritten in place keeps its size: only its modification time tells, or, when
        /// the writer set that back, its change time. The pack fails naming it (it stored a mix of
        /// old and new bytes, silently), or with changes allowed stores what it read, with a warning.
        @Test(arguments: ["small.txt", "large.bin"], [false, true])
        func aFileModifiedWhileReadFailsOrIsStoredWithAWarning(_ name: String, keepingItsTime: Bool) async throws {
            let dir = try TemporaryDirectory()
            let original = name == "large.bin" ? Samples.noise1Point2M : Array("small content".utf8)
            try dir.file("src/" + name, original)
            let victim = dir.path + "/src/" + name
            var options = testOptions()
            options.fileSystem = Self.rewrittenWhileRead(victim, keepingItsTime: keepingItsTime)
            let archive = dir.path + "/m.tar.xz"
            let error = await expectArchiveError(name) {
                try await ArchivePacker.pack([PackSource(path: dir.path + "/src")], to: .file(archive), options: options)
            }
            #expect(error?.code == .changedWhileReading)
            #expect(error?.path == victim)
            #expect(error?.message.contains("modified while it was read") == true, "\(String(describing: error))")
            #expect(!exists(archive))

            options.fileSystem = Self.rewrittenWhileRead(victim, keepingItsTime: keepingItsTime)
            options.changedWhileReading = .warn
            let summary = try await ArchivePacker.pack([PackSource(path: dir.path + "/src")], to: .file(archive), options: options)
            #expect(summary.warnings.map(\.path) == [victim])
            #expect(try await ArchiveReader(path: archive).contents(of: "src/" + name) == original)
        }

        /// `victim` is replaced by a FIFO with no writer just before it is opened: a blocking open
        /// of it waits for good.
        static func replacedByFIFO(_ victim: String) -> FileSystem {
            var fs = FileSystem.system
            fs.openForReading = { path in
                if path == victim {
                    unlink(path)
                    mkfifo(path, 0o644)
                }
                return try FileSystem.system.openForReading(path)
            }
            return fs
        }

        /// A listed file replaced by a FIFO is found to be no longer a regular file, at once: its
        /// open blocked until the watchdog failed the pack as stalled.
        @Test(arguments: ["small.txt", "large.bin"])
        func aFileReplacedByAFIFOIsRefusedWithoutBlocking(_ name: String) async throws {
            let (dir, victim) = try Self.smallAndLarge(victim: name)
            var options = testOptions()
            options.fileSystem = Self.replacedByFIFO(victim)
            options.stallPolicy = WatchdogPolicy(defaultStallTimeout: .seconds(3), checkInterval: .milliseconds(10))
            let archive = dir.path + "/f.tar.xz"
            let error = await expectArchiveError(name) {
                try await ArchivePacker.pack([PackSource(path: dir.path + "/src")], to: .file(archive), options: options)
            }
            #expect(error?.code == .changedWhileReading, "\(String(describing: error))")
            #expect(error?.message.hasPrefix("was replaced by something other than a file before it could be read; ") == true)
            #expect(error?.path == victim)

            try FileManager.default.removeItem(atPath: victim)
            try dir.file("src/" + name, "back")
            options.fileSystem = Self.replacedByFIFO(victim)
            options.unreadable = .warn
            let summary = try await ArchivePacker.pack([PackSource(path: dir.path + "/src")], to: .file(archive), options: options)
            #expect(summary.warnings.map(\.message) == ["skipped: was replaced by something other than a file before it could be read"])
            #expect(try await ArchiveReader(path: archive).verify() == 2)
        }

        /// A member name longer than a reader accepts (64 KiB) is refused before anything is
        /// written: the pack used to succeed with an archive no extraction could read.
        @Test func aNameNoReaderAcceptsIsRefused() async throws {
            let dir = try TemporaryDirectory()
            try dir.file("src/a.txt", "a")
            let long = String(repeating: "d/", count: 33_000) + "a.txt"
            let archive = dir.path + "/long.tar.xz"
            let error = await expectArchiveError("long name") {
                try await ArchivePacker.pack(
                    [PackSource(path: dir.path + "/src/a.txt", archivePath: long)], to: .file(archive), options: testOptions())
            }
            #expect(error?.code == .invalidArchivePath)
            #expect(error?.message.contains("\(long.utf8.count) bytes") == true, "\(String(describing: error))")
            #expect(!exists(archive))
        }
    }
}
