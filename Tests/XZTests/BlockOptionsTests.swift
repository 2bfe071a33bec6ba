import CLZMA
import TestSupport
import Testing

@testable import XZ

@Suite(.background) struct BlockOptionsTests {
    @Test func decodedFiltersAreReleasedAndReusable() throws {
        let input = TestData.mild(5000, seed: 70)
        let encoder = try BlockEncoder(preset: 3, maxChunkSize: 1 << 20)
        let block = try input.withUnsafeBytes { try encoder.encode($0) }
        let options = BlockOptions()
        for _ in 0..<3 {
            try block.bytes.withUnsafeBytes { try options.decodeHeader($0, check: .crc64, fileOffset: 0) }
            #expect(options.filters[0].id == amk_lzma_filter_lzma2)
            #expect(options.filters[0].options != nil)
            #expect(options.filters[1].id == amk_lzma_vli_unknown)
        }
        options.releaseDecodedFilters()
        #expect(options.filters[0].id == amk_lzma_vli_unknown)
        #expect(options.filters[0].options == nil)
    }

    @Test func resetSetsCheckAndUnknownSizes() {
        let options = BlockOptions()
        options.reset(check: .sha256)
        #expect(options.block.pointee.check == LZMA_CHECK_SHA256)
        #expect(options.block.pointee.compressed_size == amk_lzma_vli_unknown)
        #expect(options.block.pointee.uncompressed_size == amk_lzma_vli_unknown)
        #expect(options.block.pointee.filters == options.filters)
    }
}
