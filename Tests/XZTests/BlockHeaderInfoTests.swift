import TestSupport
import Testing
import XZ

@Suite(.background) struct BlockHeaderInfoTests {
    @Test func parsesOurHeaders() throws {
        let input = TestData.mild(123_456, seed: 50)
        let encoder = try BlockEncoder(preset: 1, maxChunkSize: input.count)
        let block = try input.withUnsafeBytes { try encoder.encode($0) }
        let info = try block.bytes.withUnsafeBytes { try BlockHeaderInfo.parse($0, check: .crc64) }
        #expect(info.headerSize % 4 == 0)
        #expect(info.headerSize >= 8)
        #expect(info.uncompressedSize == 123_456)
        #expect(info.totalSize(check: .crc64) == UInt64(block.bytes.count))
        #expect(UInt64(info.headerSize) + info.compressedSize! + 8 == block.unpaddedSize)
    }

    @Test func totalSizeRoundsTheDataUp() {
        let info = BlockHeaderInfo(headerSize: 12, compressedSize: 13, uncompressedSize: nil)
        #expect(info.totalSize(check: .crc64) == 12 + 16 + 8)
        #expect(info.totalSize(check: .none) == 12 + 16)
        #expect(info.totalSize(check: .sha256) == 12 + 16 + 32)
        #expect(BlockHeaderInfo(headerSize: 12, compressedSize: nil, uncompressedSize: 5).totalSize(check: .crc64) == nil)
    }

    @Test func indexIndicatorIsRefused() throws {
        let error = #expect(throws: XZError.self) {
            try [UInt8]([0, 1, 2, 3, 4, 5, 6, 7]).withUnsafeBytes { try BlockHeaderInfo.parse($0, check: .crc64, fileOffset: 900) }
        }
        #expect(error?.code == .data)
        #expect(error?.offset == 900)
    }

    @Test func garbageIsRefused() throws {
        var generator = TestData(seed: 51)
        var refused = 0
        for _ in 0..<200 {
            var bytes = TestData.random(1024, seed: generator.next())
            bytes[0] = max(bytes[0], 1)
            if (try? bytes.withUnsafeBytes { try BlockHeaderInfo.parse($0, check: .crc64) }) == nil { refused += 1 }
        }
        // A random header passes its CRC32 with odds of 1 in 2^32.
        #expect(refused == 200)
    }

    @Test func shortHeaderIsTruncated() throws {
        // First byte 0x02 announces a 12-byte header.
        let error = #expect(throws: XZError.self) {
            try [UInt8]([0x02, 0, 0, 0]).withUnsafeBytes { try BlockHeaderInfo.parse($0, check: .crc64, fileOffset: 24) }
        }
        #expect(error?.code == .truncated)
        #expect(error?.offset == 24)
        let empty = #expect(throws: XZError.self) { try [UInt8]().withUnsafeBytes { try BlockHeaderInfo.parse($0, check: .crc64) } }
        #expect(empty?.code == .truncated)
    }
}
