import TestSupport
import Testing
import XZ

@Suite(.background) struct XZStreamInfoTests {
    @Test func describesEachAssembledStream() throws {
        let encoder = try BlockEncoder(preset: 0, maxChunkSize: 20_000)
        let first = try assembleStream([TestData.mild(20_000, seed: 110)].map { p in try p.withUnsafeBytes { try encoder.encode($0) } })
        let second = try assembleStream(
            [TestData.mild(15_000, seed: 111), TestData.mild(5, seed: 112)].map { p in try p.withUnsafeBytes { try encoder.encode($0) } })
        let file = first + [UInt8](repeating: 0, count: 12) + second + [0, 0, 0, 0]
        let streams = try readIndex(file).streams
        #expect(streams.count == 2)
        #expect(streams[0].headerOffset == 0)
        #expect(streams[0].padding == 12)
        #expect(streams[0].blocks.count == 1)
        #expect(streams[0].uncompressedSize == 20_000)
        #expect(streams[0].indexSize == 12)
        #expect(streams[1].headerOffset == UInt64(first.count + 12))
        #expect(streams[1].padding == 4)
        #expect(streams[1].blocks.map(\.uncompressedOffset) == [20_000, 35_000])
        #expect(streams[1].blocks[0].compressedOffset == UInt64(first.count + 12 + 12))
        #expect(streams[1].uncompressedSize == 15_005)
    }
}
