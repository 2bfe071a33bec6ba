import Foundation
import IndexedArchive
import TestSupport
import Testing

/// The writer through the packer: pipes, atomic files, races for one destination.
extension EngineSuites {
    @Suite struct ArchiveWriterTests {
        /// Reads `readEnd` to its end, then closes it, on a thread of its own, as a socket peer
        /// would. (Not in a task: a blocking read would hold a thread of the cooperative pool
        /// that the pack needs.)
        static func drain(_ readEnd: Int32) async throws -> [UInt8] {
            try await offPool { () -> [UInt8] in
                defer { close(readEnd) }
                var out: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 1 << 16)
                while true {
                    let n = buffer.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
                    if n <= 0 { break }
                    out += buffer[0..<n]
                }
                return out
            }
        }

        /// Packs `packed`'s tree into a pipe, through the destination `through` makes of the
        /// pipe's writing end, and returns what came out of the pipe.
        static func packThroughAPipe(
            _ packed: PackedTree, _ through: (Int32) -> ArchiveDestination
        ) async throws -> (bytes: [UInt8], summary: PackSummary) {
            let fds = try pipeClosedOnExec()
            let writeEnd = fds[1]
            async let received = Self.drain(fds[0])
            let summary: PackSummary
            do {
                defer { close(writeEnd) }
                summary = try await ArchivePacker.pack(
                    [PackSource(path: packed.root, archivePath: "src")], to: through(writeEnd),
                    options: testOptions(metadata: ["resourcesVersion": "7"]))
            }
            return (try await received, summary)
        }

        @Test func anArchiveWrittenToAPipeIsComplete() async throws {
            let packed = try await PackedTree.make()
            let (bytes, summary) = try await Self.packThroughAPipe(packed) { .fileDescriptor($0) }
            #expect(UInt64(bytes.count) == summary.archiveBytes)
            #expect(summary.blocks == packed.summary.blocks)
            let path = packed.dir.path + "/piped.tar.xz"
            try await writeBytes(path, bytes)
            let reader = try ArchiveReader(path: path)
            #expect(reader.mode == .indexed)
            #expect(try await reader.verify() == packed.summary.entries)
            // Same tree, same options: the same bytes as the archive written to a file.
            #expect(bytes == (try await readBytes(packed.archive)))
        }

        /// A pipe or a socket whose reader stopped taking (`amk pack -o - | ssh`, the far side
        /// stalled): cancelling the pack ends it promptly with `CancellationError`. The write was
        /// a blocking call that returned only when the reader read, and the watchdog abandoned the
        /// pack after its grace period with `.terminated`.
        @Test(arguments: [false, true])
        func aPackIntoAStalledReaderEndsWhenCancelled(socket: Bool) async throws {
            let dir = try TemporaryDirectory()
            for i in 0..<6 { try createFile(dir.path + "/src/f\(i)", sampleBytes(count: 1 << 20, seed: UInt64(i), text: false)) }
            var fds: [Int32] = [-1, -1]
            if socket {
                try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
            } else {
                fds = try pipeClosedOnExec()
            }
            defer {
                close(fds[0])
                close(fds[1])
            }
            let writeEnd = fds[1]
            var options = testOptions()
            options.preset = 0
            let pack = Task {
                try await ArchivePacker.pack(
                    [PackSource(path: dir.path + "/src", archivePath: "src")], to: .fileDescriptor(writeEnd), options: options)
            }
            // Until the output is full: the writer then waits for a reader that never comes.
            var entry = pollfd(fd: writeEnd, events: Int16(POLLOUT), revents: 0)
            let started = ContinuousClock.now
            while poll(&entry, 1, 0) != 0 && ContinuousClock.now - started < .seconds(60) {
                try await Task.sleep(for: .milliseconds(20))
            }
            try await Task.sleep(for: .milliseconds(300))
            let cancelled = ContinuousClock.now
            pack.cancel()
            let result = await pack.result
            let elapsed = ContinuousClock.now - cancelled
            #expect(throws: CancellationError.self) { try result.get() }
            #expect(elapsed < .milliseconds(1500), "\(elapsed) after the cancellation")
        }

        /// A reader that takes a little at a time keeps the pipe nearly full: the writer, which
        /// writes only as much as there is room for, still delivers every byte, in order.
        @Test func aSlowReaderOfAPipeGetsTheWholeArchive() async throws {
            let packed = try await PackedTree.make()
            let fds = try pipeClosedOnExec()
            let readEnd = fds[0]
            async let received = offPool { () -> [UInt8] in
                defer { close(readEnd) }
                var out: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 1000)
                while true {
                    let n = buffer.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
                    if n <= 0 { break }
                    out += buffer[0..<n]
                    if out.count % 50 == 0 { usleep(200) }
                }
                return out
            }
            do {
                defer { close(fds[1]) }
                _ = try await ArchivePacker.pack(
                    [PackSource(path: packed.root, archivePath: "src")], to: .fileDescriptor(fds[1]),
                    options: testOptions(metadata: ["resourcesVersion": "7"]))
            }
            #expect(try await received == (try await readBytes(packed.archive)))
        }

        /// A path that the kernel follows to a pipe no path names, as `/dev/stdout` and `>(cmd)`
        /// are: written into, as `-o -` writes. Following the links by hand reached
        /// `/proc/self/fd/pipe:[…]`, and the pack failed creating a temporary file there.
        @Test func aPathThatLeadsToAPipeIsWrittenInto() async throws {
            let packed = try await PackedTree.make()
            let (bytes, _) = try await Self.packThroughAPipe(packed) { .file("/proc/self/fd/\($0)") }
            #expect(bytes == (try await readBytes(packed.archive)))
        }

        /// Standard output sent to a file in the tree packed (`amk pack d -o - > d/a.tar.xz`): that
        /// file is the archive as it grows, and is skipped with a warning. It was stored as a
        /// piece of the unfinished archive, with no warning, or failed the pack as a file that grew.
        @Test func aFileBehindTheOutputDescriptorIsNotStored() async throws {
            let dir = try TemporaryDirectory()
            try dir.file("src/a.txt", "a")
            try dir.file("src/z.bin", String(repeating: "z", count: 3 << 20))
            let archive = dir.path + "/src/self.tar.xz"
            let fd = open(archive, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            #expect(fd >= 0)
            let summary: PackSummary
            do {
                defer { close(fd) }
                summary = try await ArchivePacker.pack(
                    [PackSource(path: dir.path + "/src")], to: .fileDescriptor(fd), options: testOptions())
            }
            let reader = try ArchiveReader(path: archive)
            let paths = try await reader.entries().map(\.path)
            #expect(Set(paths) == ["src/", "src/a.txt", "src/z.bin"] && paths.count == 3, "\(paths)")
            #expect(try await reader.verify() == 3)
            #expect(summary.warnings.map(\.path) == [archive], "\(summary.warnings)")
            #expect(summary.warnings.first?.message.contains("the archive being written") == true, "\(summary.warnings)")
        }

        @Test(.enabled(if: toolExists("xz")))
        func xzTestsAnArchiveAsItIsPiped() async throws {
            let packed = try await PackedTree.make()
            let fds = try pipeClosedOnExec()
            // xz reads the archive through the pipe while the packer writes it.
            let xz = try ChildProcess.start("xz", ["-t", "-"], stdinDescriptor: fds[0])
            close(fds[0])
            do {
                defer { close(fds[1]) }
                try await ArchivePacker.pack(
                    [PackSource(path: packed.root, archivePath: "src")], to: .fileDescriptor(fds[1]),
                    options: testOptions())
            }
            let result = try await xz.wait()
            #expect(result.status == 0, "\(result.stderr)")
        }

        @Test func racingPacksToOneDestinationLeaveOneCompleteArchive() async throws {
            let dir = try TemporaryDirectory()
            try await offPool {
                try dir.file("a/file.txt", sampleBytes(count: 1_500_000, seed: 21, text: true))
                try dir.file("b/other.bin", sampleBytes(count: 1_500_000, seed: 22, text: false))
            }
            let destination = dir.path + "/race.tar.xz"
            let base = dir.path
            async let first = ArchivePacker.pack(
                [PackSource(path: base + "/a", archivePath: "a")], to: .file(destination), options: testOptions())
            async let second = ArchivePacker.pack(
                [PackSource(path: base + "/b", archivePath: "b")], to: .file(destination), options: testOptions())
            let (one, two) = try await (first, second)
            let reader = try ArchiveReader(path: destination)
            let paths = try await reader.entries().map(\.path)
            #expect(paths == ["a/", "a/file.txt"] || paths == ["b/", "b/other.bin"], "\(paths)")
            #expect(try await reader.verify() == 2)
            let size = UInt64(try await readBytes(destination).count)
            #expect(size == (paths[0] == "a/" ? one.archiveBytes : two.archiveBytes))
            #expect(listing(dir.path) == ["a", "b", "race.tar.xz"], "no temporary file is left")
        }

        /// The destination's folder is cut at its last byte `/`: a name that starts with a
        /// combining mark makes "/" and the mark one `Character`, which once put the temporary
        /// one folder up, under a name holding a `/`, and failed.
        @Test func aDestinationWhoseNameStartsWithACombiningMarkIsWritten() async throws {
            let dir = try TemporaryDirectory()
            try dir.file("src/a.txt", "a")
            try FileManager.default.createDirectory(atPath: dir.path + "/out", withIntermediateDirectories: false)
            let destination = dir.path + "/out/\u{301}x.tar.xz"
            try await ArchivePacker.pack([PackSource(path: dir.path + "/src")], to: .file(destination), options: testOptions())
            #expect(try await ArchiveReader(path: destination).entries().map(\.path) == ["src/", "src/a.txt"])
            #expect(EngineSuites.HostileNameTests.rawListing(dir.path + "/out") == [Array("\u{301}x.tar.xz".utf8)])
            #expect(listing(dir.path) == ["out", "src"])
        }

        @Test func aDestinationInAMissingDirectoryIsAnError() async throws {
            let dir = try TemporaryDirectory()
            try dir.file("src/a.txt", "a")
            let error = await expectArchiveError("missing directory") {
                try await ArchivePacker.pack(
                    [PackSource(path: dir.path + "/src")], to: .file(dir.path + "/no/such/dir/x.tar.xz"),
                    options: testOptions())
            }
            #expect(error?.code == .io(errno: ENOENT))
            #expect(listing(dir.path) == ["src"])
        }

        @Test func aSuccessfulPackReplacesTheOldFileAndLeavesNoTemporary() async throws {
            let dir = try TemporaryDirectory()
            try dir.file("src/a.txt", "a")
            try dir.file("x.tar.xz", "old")
            let archive = dir.path + "/x.tar.xz"
            var before = stat()
            lstat(archive, &before)
            let summary = try await ArchivePacker.pack([PackSource(path: dir.path + "/src")], to: .file(archive), options: testOptions())
            var after = stat()
            lstat(archive, &after)
            #expect(before.st_ino != after.st_ino, "replaced by rename, not rewritten in place")
            #expect(after.st_mode & 0o777 == 0o644)
            #expect(UInt64(after.st_size) == summary.archiveBytes)
            #expect(listing(dir.path) == ["src", "x.tar.xz"])
        }

        static func pack(_ dir: TemporaryDirectory, to destination: String) async throws {
            try await ArchivePacker.pack([PackSource(path: dir.path + "/src")], to: .file(destination), options: testOptions())
        }

        /// An archive replaced keeps the permissions (and, as root, the owner) of the file it
        /// replaces, as `tar -cf` keeps them by writing in place: a backup kept `0600` became
        /// `0644`, readable by everyone.
        @Test func aReplacedArchiveKeepsItsPermissionsAndOwner() async throws {
            let dir = try TemporaryDirectory()
            try dir.file("src/a.txt", "a")
            try dir.file("x.tar.xz", "old")
            let archive = dir.path + "/x.tar.xz"
            chmod(archive, 0o600)
            if getuid() == 0 { chown(archive, 65534, 65534) }
            try await Self.pack(dir, to: archive)
            var after = stat()
            lstat(archive, &after)
            #expect(after.st_mode & 0o7777 == 0o600)
            if getuid() == 0 { #expect(after.st_uid == 65534 && after.st_gid == 65534) }
            #expect(try await ArchiveReader(path: archive).entries().count == 2)
        }

        /// A symbolic link is followed, as `tar -cf` follows it: the file it names is replaced (or
        /// made, when it does not exist yet), and the link stays a link.
        @Test(arguments: [true, false])
        func aLinkIsFollowed(targetExists: Bool) async throws {
            let dir = try TemporaryDirectory()
            try dir.file("src/a.txt", "a")
            if targetExists { try dir.file("real.tar.xz", "old") }
            try FileManager.default.createSymbolicLink(atPath: dir.path + "/link", withDestinationPath: "real.tar.xz")
            try await Self.pack(dir, to: dir.path + "/link")
            var info = stat()
            lstat(dir.path + "/link", &info)
            #expect(info.st_mode & S_IFMT == S_IFLNK, "the link was replaced")
            #expect(try await ArchiveReader(path: dir.path + "/real.tar.xz").entries().count == 2)
        }

        /// A FIFO is written into, not replaced: the reader at its other end gets the archive.
        @Test(.enabled(if: toolExists("xz")))
        func aFIFOIsWrittenInto() async throws {
            let dir = try TemporaryDirectory()
            try dir.file("src/a.txt", "a")
            let fifo = dir.path + "/fifo"
            #expect(mkfifo(fifo, 0o644) == 0)
            async let read = runTool(["sh", "-c", "cat '\(fifo)' > '\(dir.path)/got.tar.xz'"])
            try await Self.pack(dir, to: fifo)
            _ = try await read
            var info = stat()
            lstat(fifo, &info)
            #expect(info.st_mode & S_IFMT == S_IFIFO, "the FIFO was replaced")
            #expect(try await ArchiveReader(path: dir.path + "/got.tar.xz").entries().count == 2)
        }

        /// A device is written into, not replaced: `amk pack d -o /dev/null` as root once left a
        /// regular file where the null device was. (A private null device, made here.)
        @Test(.enabled(if: getuid() == 0, "mknod needs root"))
        func aDeviceIsWrittenInto() async throws {
            let dir = try TemporaryDirectory()
            try dir.file("src/a.txt", "a")
            let device = dir.path + "/null"
            let nullDevice = dev_t((1 << 8) | 3)  // major 1, minor 3, in Linux's encoding
            #expect(mknod(device, S_IFCHR | 0o666, nullDevice) == 0)
            try await Self.pack(dir, to: device)
            var info = stat()
            lstat(device, &info)
            #expect(info.st_mode & S_IFMT == S_IFCHR, "the device was replaced")
        }

        @Test func aFolderIsRefused() async throws {
            let dir = try TemporaryDirectory()
            try dir.file("src/a.txt", "a")
            let error = await expectArchiveError("folder") { try await Self.pack(dir, to: dir.path + "/src") }
            #expect(error?.code == .io(errno: EISDIR))
            #expect(error?.message.contains("folder") == true, "\(String(describing: error))")
        }

        /// Packing a folder into an archive inside it, again: the archive being replaced is not
        /// stored (a stale copy of the same data went into the new one), with a warning; the new one
        /// never is (it has no name until it is complete).
        @Test func theArchiveBeingReplacedIsNotStored() async throws {
            let dir = try TemporaryDirectory()
            try dir.file("src/a.txt", "a")
            let archive = dir.path + "/src/self.tar.xz"
            try await Self.pack(dir, to: archive)
            #expect(try await ArchiveReader(path: archive).entries().map(\.path) == ["src/", "src/a.txt"])
            let summary = try await ArchivePacker.pack([PackSource(path: dir.path + "/src")], to: .file(archive), options: testOptions())
            #expect(try await ArchiveReader(path: archive).entries().map(\.path) == ["src/", "src/a.txt"])
            #expect(summary.warnings.map(\.path) == [archive], "\(summary.warnings)")
        }
    }
}
