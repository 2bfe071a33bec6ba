import CLZMA
import TestSupport
import Testing
import XZ

@Suite(.background) struct XZIndexBuilderTests {
    /// The same records encoded by liblzma's own index code.
    private func liblzmaIndex(_ records: [(UInt64, UInt64)]) -> [UInt8] {
        let index = lzma_index_init(nil)
        defer { lzma_index_end(index, nil) }
        for (unpadded, uncompressed) in records {
            #expect(lzma_index_append(index, nil, unpadded, uncompressed) == LZMA_OK)
        }
        let size = Int(lzma_index_size(index))
        var out = [UInt8](repeating: 0, count: size)
        var position = 0
        #expect(lzma_index_buffer_encode(index, &out, &position, size) == LZMA_OK)
        #expect(position == size)
        return out
    }

    @Test func emptyIndex() {
        let builder = XZIndexBuilder()
        #expect(builder.blockCount == 0)
        #expect(builder.uncompressedSize == 0)
        #expect(builder.encoded() == liblzmaIndex([]))
        #expect(builder.encoded().count == 8)
    }

    @Test func matchesLiblzma() throws {
        let records: [(UInt64, UInt64)] = [
            (5, 0), (1_000_013, 16 << 20), (16_777_300, 16 << 20), (127, 128), (UInt64(1) << 40 | 1, UInt64(1) << 50)
        ]
        var builder = XZIndexBuilder()
        for (unpadded, uncompressed) in records {
            try builder.append(unpaddedSize: unpadded, uncompressedSize: uncompressed)
        }
        #expect(builder.blockCount == records.count)
        #expect(builder.uncompressedSize == records.reduce(0) { $0 + $1.1 })
        #expect(builder.encoded() == liblzmaIndex(records))
    }

    @Test func manyRecordsMatchLiblzma() throws {
        var generator = TestData(seed: 9)
        var records: [(UInt64, UInt64)] = []
        var builder = XZIndexBuilder()
        for _ in 0..<1000 {
            let record = (5 + generator.next() % 100_000_000, generator.next() % 100_000_000)
            records.append(record)
            try builder.append(unpaddedSize: record.0, uncompressedSize: record.1)
        }
        #expect(builder.encoded() == liblzmaIndex(records))
    }

    @Test func rejectsImpossibleSizes() throws {
        var builder = XZIndexBuilder()
        let small = #expect(throws: XZError.self) { try builder.append(unpaddedSize: 4, uncompressedSize: 1) }
        #expect(small?.code == .program)
        #expect(small?.message.isEmpty == false)
        let huge = #expect(throws: XZError.self) { try builder.append(unpaddedSize: 8, uncompressedSize: UInt64.max) }
        #expect(huge?.code == .program)
        #expect(builder.blockCount == 0)
    }

    @Test func rejectsStreamsPastTheFormatLimit() throws {
        var builder = XZIndexBuilder()
        let big = (UInt64.max / 2) & ~3
        try builder.append(unpaddedSize: big - 100, uncompressedSize: 1)
        let error = #expect(throws: XZError.self) { try builder.append(unpaddedSize: 1000, uncompressedSize: 1) }
        #expect(error?.code == .data)
        #expect(builder.blockCount == 1)
    }
}
