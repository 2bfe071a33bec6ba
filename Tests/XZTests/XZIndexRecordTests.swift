import TestSupport
import Testing
import XZ

@Suite(.background) struct XZIndexRecordTests {
    @Test func recordsTileTheStream() throws {
        let encoder = try BlockEncoder(preset: 0, maxChunkSize: 50_000)
        let parts = (0..<5).map { TestData.mild(10_000 * ($0 + 1) + $0, seed: UInt64(100 + $0)) }
        let blocks = try parts.map { part in try part.withUnsafeBytes { try encoder.encode($0) } }
        let file = try assembleStream(blocks)
        let index = try readIndex(file)
        let records = index.blocks
        #expect(records.count == 5)
        for (record, part) in zip(records, parts) {
            #expect(record.totalSize == (record.unpaddedSize + 3) & ~3)
            #expect(record.totalSize % 4 == 0)
            #expect(record.uncompressedSize == UInt64(part.count))
        }
        for (previous, next) in zip(records, records.dropFirst()) {
            #expect(next.compressedOffset == previous.compressedOffset + previous.totalSize)
            #expect(next.uncompressedOffset == previous.uncompressedOffset + previous.uncompressedSize)
        }
        let last = try #require(records.last)
        #expect(last.compressedOffset + last.totalSize + index.streams[0].indexSize + 12 == UInt64(file.count))
    }

    @Test func equality() {
        let a = XZIndexRecord(compressedOffset: 12, uncompressedOffset: 0, unpaddedSize: 29, totalSize: 32, uncompressedSize: 100)
        var b = a
        #expect(a == b)
        b.uncompressedSize = 101
        #expect(a != b)
    }
}
