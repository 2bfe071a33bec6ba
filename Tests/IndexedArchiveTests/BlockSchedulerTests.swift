import Foundation
import TestSupport
import Testing
import XZ

@testable import IndexedArchive

extension EngineSuites {
    /// `BlockScheduler` on its own, on a file of many small blocks written by the `xz` tool: the
    /// bytes it hands on, their order and offsets, whether blocks are decoded ahead whole or
    /// streamed in pieces, and how much of the file a range costs.
    @Suite(.enabled(if: toolExists("xz"))) struct BlockSchedulerTests {
        /// `bytes` (400 KB by default) of numbered lines, and the same bytes as an xz file of
        /// blocks of `blockSize` (16 KiB by default).
        static func blockFile(
            in directory: TemporaryDirectory, bytes: Int = 400_000, blockSize: String = "16KiB"
        ) async throws -> (path: String, original: [UInt8]) {
            var original: [UInt8] = []
            var line = 0
            while original.count < bytes {
                original += Array("line \(line): \(line &* 2_654_435_761 % 1_000_003)\n".utf8)
                line += 1
            }
            let result = try await runTool(["xz", "-c", "-1", "--check=crc64", "--block-size=\(blockSize)"], stdin: original)
            try #require(result.status == 0)
            let path = directory.path + "/blocks-\(blockSize).xz"
            try Data(result.stdout).write(to: URL(filePath: path))
            return (path, original)
        }

        static func scheduler(_ path: String, maxBufferedBlockSize: UInt64) throws -> BlockScheduler {
            let file = try ArchiveFile(path: path)
            let index = try XZFileIndex.read(fileSize: file.size) { offset, count in try file.read(at: offset, count: count) }
            return BlockScheduler(file: file, fileIndex: index, maxBufferedBlockSize: maxBufferedBlockSize, maxDecoderMemory: 64 << 20)
        }

        /// What `decode` handed on, checked to be contiguous from `from`.
        static func decode(
            _ scheduler: BlockScheduler, _ range: ClosedRange<Int>, from: UInt64 = 0, to: UInt64, parallelism: Int
        ) async throws -> [UInt8] {
            var out: [UInt8] = []
            try await scheduler.decode(range, from: from, to: to, parallelism: parallelism) { piece in
                #expect(piece.offset == from + UInt64(out.count), "a piece out of order or with a gap")
                piece.withBytes { out += $0 }
            }
            return out
        }

        /// Blocks decoded ahead on 1 to 4 threads, or (larger than the buffered bound) streamed in
        /// their turn: the same bytes, in order, each block decoded once.
        @Test(arguments: [(1, true), (2, true), (4, true), (2, false)])
        func everyBlockArrivesInOrderOnce(parallelism: Int, buffered: Bool) async throws {
            let directory = try TemporaryDirectory()
            let (path, original) = try await Self.blockFile(in: directory)
            let scheduler = try Self.scheduler(path, maxBufferedBlockSize: buffered ? 1 << 20 : 1024)
            let blocks = scheduler.fileIndex.blocks.count
            try #require(blocks > 20)
            let out = try await Self.decode(scheduler, 0...(blocks - 1), to: .max, parallelism: parallelism)
            #expect(out == original)
            #expect(scheduler.decodes.load(ordering: .relaxed) == blocks)
        }

        /// Blocks decoded ahead fill the arrays of blocks already delivered: a full reading maps
        /// fresh memory for a few blocks, not for every one (each page of a fresh mapping faults).
        @Test func deliveredBlocksLendTheirArraysToLaterOnes() async throws {
            let directory = try TemporaryDirectory()
            let (path, original) = try await Self.blockFile(in: directory, bytes: 6_000_000, blockSize: "512KiB")
            let scheduler = try Self.scheduler(path, maxBufferedBlockSize: 1 << 20)
            let blocks = scheduler.fileIndex.blocks.count
            try #require(blocks >= 11)
            let out = try await Self.decode(scheduler, 0...(blocks - 1), to: .max, parallelism: 2)
            #expect(out == original)
            // At most window + parallelism + 1 arrays are ever made; the rest are reused.
            #expect(scheduler.reusedBuffers.load(ordering: .relaxed) >= blocks - 6, "of \(blocks) blocks")
        }

        /// A range of the stream costs only the blocks it spans, and only its bytes are handed on.
        @Test(arguments: [true, false])
        func aRangeDecodesOnlyTheBlocksItSpans(buffered: Bool) async throws {
            let directory = try TemporaryDirectory()
            let (path, original) = try await Self.blockFile(in: directory)
            let scheduler = try Self.scheduler(path, maxBufferedBlockSize: buffered ? 1 << 20 : 1024)
            let (from, to): (UInt64, UInt64) = (100_001, 170_123)
            let first = try #require(scheduler.fileIndex.locate(uncompressedOffset: from))
            let last = try #require(scheduler.fileIndex.locate(uncompressedOffset: to - 1))
            let out = try await Self.decode(scheduler, first...last, from: from, to: to, parallelism: 2)
            #expect(out == Array(original[Int(from)..<Int(to)]))
            #expect(scheduler.decodes.load(ordering: .relaxed) == last - first + 1)
            #expect(last - first + 1 < scheduler.fileIndex.blocks.count / 4)
        }

        /// A damaged block fails the decoding with an error that names it; nothing from it or after
        /// it is handed on.
        @Test(arguments: [true, false])
        func aDamagedBlockStopsTheDecodingThere(buffered: Bool) async throws {
            let directory = try TemporaryDirectory()
            let (path, original) = try await Self.blockFile(in: directory)
            let damaged = try Self.scheduler(path, maxBufferedBlockSize: 1 << 20).fileIndex.blocks[10]
            var bytes = try [UInt8](Data(contentsOf: URL(filePath: path)))
            bytes[Int(damaged.compressedOffset + damaged.totalSize / 2)] ^= 0x55
            try Data(bytes).write(to: URL(filePath: path))
            let scheduler = try Self.scheduler(path, maxBufferedBlockSize: buffered ? 1 << 20 : 1024)
            let blocks = scheduler.fileIndex.blocks.count
            var out: [UInt8] = []
            let error = await #expect(throws: ArchiveError.self) {
                try await scheduler.decode(0...(blocks - 1), to: .max, parallelism: 2) { piece in
                    piece.withBytes { out += $0 }
                }
            }
            // Typed, and naming where in the file the damaged block lies.
            #expect(error?.code == .corrupt, "\(String(describing: error))")
            #expect(error?.path == path, "\(String(describing: error))")
            let offset = try #require(error?.offset)
            #expect((damaged.compressedOffset..<damaged.compressedOffset + damaged.totalSize).contains(offset), "\(offset)")
            #expect(UInt64(out.count) <= damaged.uncompressedOffset)
            #expect(out == Array(original[..<out.count]))
        }
    }
}
