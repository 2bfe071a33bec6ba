import CLZMA
import TestSupport
import Testing
import XZ

@Suite(.background) struct StreamFooterTests {
    @Test func sizeIsTwelve() {
        #expect(StreamFooter.size == 12)
    }

    @Test(arguments: [(XZCheck.crc64, UInt64(8)), (.crc32, 12), (.none, 4096), (.sha256, UInt64(1) << 34)])
    func encodingMatchesLiblzma(check: XZCheck, indexSize: UInt64) throws {
        var flags = lzma_stream_flags()
        flags.version = 0
        flags.check = lzma_check(UInt32(check.rawValue))
        flags.backward_size = indexSize
        var expected = [UInt8](repeating: 0, count: 12)
        #expect(lzma_stream_footer_encode(&flags, &expected) == LZMA_OK)
        let encoded = StreamFooter.encode(check: check, indexSize: indexSize)
        #expect(encoded == expected)
        let decoded = try encoded.withUnsafeBytes { try StreamFooter.decode($0) }
        #expect(decoded.check == check)
        #expect(decoded.indexSize == indexSize)
    }

    @Test func missingMagicIsFormatError() throws {
        var bytes = StreamFooter.encode(check: .crc64, indexSize: 8)
        bytes[11] = 0
        let error = #expect(throws: XZError.self) { try bytes.withUnsafeBytes { try StreamFooter.decode($0, fileOffset: 64) } }
        #expect(error?.code == .format)
        #expect(error?.offset == 64)
    }

    @Test func flippedBackwardSizeIsDataError() throws {
        var bytes = StreamFooter.encode(check: .crc64, indexSize: 8)
        bytes[4] ^= 0x10
        let error = #expect(throws: XZError.self) { try bytes.withUnsafeBytes { try StreamFooter.decode($0) } }
        #expect(error?.code == .data)
        #expect(error?.message.contains("CRC32") == true)
    }

    @Test func shortInputIsTruncated() throws {
        let error = #expect(throws: XZError.self) { try [UInt8]([0x59, 0x5A]).withUnsafeBytes { try StreamFooter.decode($0) } }
        #expect(error?.code == .truncated)
    }
}
