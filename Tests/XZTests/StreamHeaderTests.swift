import CLZMA
import TestSupport
import Testing
import XZ

@Suite(.background) struct StreamHeaderTests {
    @Test func sizeIsTwelve() {
        #expect(StreamHeader.size == 12)
    }

    @Test(arguments: [XZCheck.none, .crc32, .crc64, .sha256])
    func encodingMatchesLiblzma(check: XZCheck) throws {
        var flags = lzma_stream_flags()
        flags.version = 0
        flags.check = lzma_check(UInt32(check.rawValue))
        var expected = [UInt8](repeating: 0, count: 12)
        #expect(lzma_stream_header_encode(&flags, &expected) == LZMA_OK)
        let encoded = StreamHeader.encode(check: check)
        #expect(encoded == expected)
        #expect(try encoded.withUnsafeBytes { try StreamHeader.decode($0) } == check)
    }

    @Test func crc64HeaderBytes() {
        #expect(Array(StreamHeader.encode(check: .crc64).prefix(8)) == [0xFD, 0x37, 0x7A, 0x58, 0x5A, 0x00, 0x00, 0x04])
    }

    @Test func badMagicIsFormatError() throws {
        var bytes = StreamHeader.encode(check: .crc64)
        bytes[1] = 0x38
        let error = #expect(throws: XZError.self) { try bytes.withUnsafeBytes { try StreamHeader.decode($0, fileOffset: 100) } }
        #expect(error?.code == .format)
        #expect(error?.offset == 100)
        #expect(error?.message.isEmpty == false)
    }

    @Test func flippedCRCIsDataError() throws {
        var bytes = StreamHeader.encode(check: .crc64)
        bytes[10] ^= 0x01
        let error = #expect(throws: XZError.self) { try bytes.withUnsafeBytes { try StreamHeader.decode($0) } }
        #expect(error?.code == .data)
        #expect(error?.message.contains("CRC32") == true)
    }

    @Test func shortInputIsTruncated() throws {
        let bytes = Array(StreamHeader.encode(check: .crc64).prefix(11))
        let error = #expect(throws: XZError.self) { try bytes.withUnsafeBytes { try StreamHeader.decode($0, fileOffset: 5) } }
        #expect(error?.code == .truncated)
        #expect(error?.offset == 5)
    }

    @Test func unknownCheckIDIsUnsupported() throws {
        // Check ID 2 is reserved: valid framing, but no XZCheck for it.
        var bytes = StreamHeader.encode(check: .crc64)
        bytes[7] = 0x02
        let crc = CRC.crc32(Array(bytes[6..<8]))
        bytes.replaceSubrange(8..<12, with: withUnsafeBytes(of: crc.littleEndian, Array.init))
        let error = #expect(throws: XZError.self) { try bytes.withUnsafeBytes { try StreamHeader.decode($0) } }
        #expect(error?.code == .unsupportedCheck)
    }

    @Test func reservedFlagsAreOptionsError() throws {
        var bytes = StreamHeader.encode(check: .crc64)
        bytes[6] = 0x01
        let crc = CRC.crc32(Array(bytes[6..<8]))
        bytes.replaceSubrange(8..<12, with: withUnsafeBytes(of: crc.littleEndian, Array.init))
        let error = #expect(throws: XZError.self) { try bytes.withUnsafeBytes { try StreamHeader.decode($0) } }
        #expect(error?.code == .options)
    }
}
