import TestSupport
import Testing
import XZ

@Suite(.background) struct CRCTests {
    let check = Array("123456789".utf8)

    @Test func knownVectors() {
        #expect(CRC.crc32(check) == 0xCBF4_3926)
        #expect(CRC.crc64(check) == 0x995D_C9BB_DF19_39FA)
    }

    @Test func rawBufferMatchesArray() {
        check.withUnsafeBytes { raw in
            #expect(CRC.crc32(raw) == 0xCBF4_3926)
            #expect(CRC.crc64(raw) == 0x995D_C9BB_DF19_39FA)
        }
    }

    @Test func incrementalEqualsOneShot() {
        let data = TestData.random(100_003, seed: 7)
        for cut in [0, 1, 4096, 65_537, data.count] {
            let head = Array(data[..<cut])
            let tail = Array(data[cut...])
            #expect(CRC.crc32(tail, previous: CRC.crc32(head)) == CRC.crc32(data))
            #expect(CRC.crc64(tail, previous: CRC.crc64(head)) == CRC.crc64(data))
        }
    }

    @Test func emptyInputKeepsPrevious() {
        #expect(CRC.crc32([]) == 0)
        #expect(CRC.crc64([]) == 0)
        #expect(CRC.crc32([], previous: 0x1234_5678) == 0x1234_5678)
        #expect(CRC.crc64(UnsafeRawBufferPointer(start: nil, count: 0), previous: 42) == 42)
    }

    @Test func differentDataGivesDifferentChecksums() {
        var other = check
        other[4] ^= 1
        #expect(CRC.crc32(other) != CRC.crc32(check))
        #expect(CRC.crc64(other) != CRC.crc64(check))
    }
}
