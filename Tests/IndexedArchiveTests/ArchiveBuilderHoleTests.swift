import Foundation
import Synchronization
import TestSupport
import Testing

@testable import IndexedArchive

extension EngineSuites {
    /// A sparse file's holes are skipped, not read: their zeros are stored as if they had been
    /// read, and checksummed by their count.
    @Suite struct ArchiveBuilderHoleTests {
        /// A file of `size` bytes with data at `runs` (offset, length), the rest holes; its
        /// content as it reads.
        static func sparseFile(_ path: String, size: Int, runs: [(Int, Int)]) throws -> [UInt8] {
            var content = [UInt8](repeating: 0, count: size)
            #expect(FileManager.default.createFile(atPath: path, contents: nil))
            let handle = try FileHandle(forWritingTo: URL(filePath: path))
            for (index, (offset, length)) in runs.enumerated() {
                let bytes = sampleBytes(count: length, seed: UInt64(index + 1), text: false)
                content.replaceSubrange(offset..<(offset + length), with: bytes)
                try handle.seek(toOffset: UInt64(offset))
                try handle.write(contentsOf: Data(bytes))
            }
            try handle.truncate(atOffset: UInt64(size))
            try handle.close()
            return content
        }

        /// Bytes read so far (a class, so that the file system's closures share it).
        final class ByteCount: Sendable {
            let total = Mutex(0)
            var value: Int { total.withLock { $0 } }
        }

        /// The real file system, counting the bytes read from `path`.
        static func counting(_ path: String, into count: ByteCount) -> FileSystem {
            var fs = FileSystem.system
            fs.read = { fd, buffer, name in
                let read = try FileSystem.system.read(fd, buffer, name)
                if name == path { count.total.withLock { $0 += read } }
                return read
            }
            return fs
        }

        /// Data at the start, in the middle across a slice's end, near the end, and a file
        /// that ends in a hole: each reads back byte for byte, the index's checksum holds, and
        /// only about the data is read where the file system has holes.
        @Test(arguments: [false, true])
        func holesAreSkippedAndReadBackAsZeros(endsInHole: Bool) async throws {
            let dir = try TemporaryDirectory()
            let size = 24 << 20
            var runs = [(0, 4000), ((1 << 20) + 77, 3000), ((9 << 20) - 5, 10), (17 << 20, 1 << 20)]
            if !endsInHole { runs.append((size - 100, 100)) }
            try FileManager.default.createDirectory(atPath: dir.path + "/src", withIntermediateDirectories: true)
            let path = dir.path + "/src/disk.img"
            let content = try Self.sparseFile(path, size: size, runs: runs)
            var info = stat()
            #expect(stat(path, &info) == 0)
            let hasHoles = Int(info.st_blocks) * 512 < size

            let read = ByteCount()
            var options = testOptions()
            options.fileSystem = Self.counting(path, into: read)
            let archive = dir.path + "/s.tar.xz"
            _ = try await ArchivePacker.pack([PackSource(path: dir.path + "/src")], to: .file(archive), options: options)
            let reader = try ArchiveReader(path: archive)
            #expect(try await reader.contents(of: "src/disk.img") == content)
            #expect(try await reader.verify() == 2)
            let bytesRead = read.value
            if hasHoles {
                // The data is 1.01 MiB; slices that start at data read up to 1 MiB past it.
                #expect(bytesRead <= 6 << 20, "\(bytesRead) bytes read of a 24 MiB file with 1 MiB of data")
            } else {
                #expect(bytesRead == size, "a file system without holes: everything is read")
            }
        }

        /// A file system that cannot tell where data is (`skipHole` answers 0) reads every byte,
        /// as before.
        @Test func withoutHoleInformationEverythingIsRead() async throws {
            let dir = try TemporaryDirectory()
            try FileManager.default.createDirectory(atPath: dir.path + "/src", withIntermediateDirectories: true)
            let path = dir.path + "/src/disk.img"
            let content = try Self.sparseFile(path, size: 5 << 20, runs: [(3 << 20, 999)])
            let read = ByteCount()
            var options = testOptions()
            var fs = Self.counting(path, into: read)
            fs.skipHole = { (_: Int32, _: Int, _: String) in 0 }
            options.fileSystem = fs
            let archive = dir.path + "/s.tar.xz"
            _ = try await ArchivePacker.pack([PackSource(path: dir.path + "/src")], to: .file(archive), options: options)
            #expect(try await ArchiveReader(path: archive).contents(of: "src/disk.img") == content)
            #expect(read.value == 5 << 20)
        }

        /// `skipHole` on the real file system: from a hole it moves to the data, at most as far
        /// as asked; at data it stays; past the last data it skips to the limit or the end.
        @Test func theSystemSkipsToTheDataAndNoFurther() throws {
            let dir = try TemporaryDirectory()
            let path = dir.path + "/f"
            _ = try Self.sparseFile(path, size: 8 << 20, runs: [(4 << 20, 4096)])
            var info = stat()
            #expect(stat(path, &info) == 0)
            try #require(Int(info.st_blocks) * 512 < 8 << 20, "this file system keeps holes")
            let fd = open(path, O_RDONLY)
            defer { close(fd) }
            #expect(try FileSystem.systemSkipHole(fd, limit: 1 << 20, path: path) == 1 << 20, "no further than the limit")
            #expect(lseek(fd, 0, SEEK_CUR) == 1 << 20)
            #expect(try FileSystem.systemSkipHole(fd, limit: 8 << 20, path: path) == 3 << 20, "up to the data")
            #expect(lseek(fd, 0, SEEK_CUR) == 4 << 20)
            #expect(try FileSystem.systemSkipHole(fd, limit: 1 << 20, path: path) == 0, "at data")
            #expect(lseek(fd, 0, SEEK_CUR) == 4 << 20, "the position is left at the data")
            #expect(lseek(fd, (4 << 20) + 4096, SEEK_SET) >= 0)
            let tail = try FileSystem.systemSkipHole(fd, limit: 1 << 20, path: path)
            // The file system may count the block around the data as data.
            #expect(tail > 0 && tail <= 1 << 20 && lseek(fd, 0, SEEK_CUR) == off_t((4 << 20) + 4096 + tail))
            // A hole at the end is skipped to the end and no further; at the end nothing is, so
            // that a file that shrank while it was read still reads as ended.
            #expect(lseek(fd, (8 << 20) - 100, SEEK_SET) >= 0)
            #expect(try FileSystem.systemSkipHole(fd, limit: 1 << 20, path: path) == 100)
            #expect(try FileSystem.systemSkipHole(fd, limit: 1 << 20, path: path) == 0)
            #expect(lseek(fd, 0, SEEK_CUR) == 8 << 20)
        }
    }
}
