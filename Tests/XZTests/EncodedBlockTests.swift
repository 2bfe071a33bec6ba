import TestSupport
import Testing
import XZ

@Suite(.background) struct EncodedBlockTests {
    @Test(arguments: [false, true])
    func layoutMatchesSizes(stored: Bool) throws {
        let input = TestData.mild(77_777, seed: 60)
        let encoder = try BlockEncoder(preset: 0, maxChunkSize: input.count)
        let block = try input.withUnsafeBytes { stored ? try encoder.encodeStored($0) : try encoder.encode($0) }
        #expect(block.isStored == stored)
        #expect(block.uncompressedSize == 77_777)
        #expect(UInt64(block.bytes.count) == (block.unpaddedSize + 3) & ~3)
        // The first byte encodes the header size; the last eight are the CRC64 of the input.
        #expect(Int(block.bytes[0]) * 4 + 4 >= 8)
        let check = block.bytes.suffix(8).reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        #expect(check == CRC.crc64(input))
    }
}
