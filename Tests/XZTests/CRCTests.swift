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

    /// Zeros checksummed without being read agree with liblzma over real zeros, for counts
    /// around every power of two a hole's length crosses, from any previous value.
    @Test func zerosWithoutReadingThemEqualTheChecksumOfZeros() {
        let zeros = [UInt8](repeating: 0, count: (1 << 20) + 1)
        var counts: [Int] = [0, 1, 2, 3, 7, 8, 9, 100, 4095, 4096, 4097, 65_535, 65_536, 1 << 20, (1 << 20) + 1]
        counts += (1...19).map { 1 << $0 }.map { $0 - 1 }
        for previous: UInt64 in [0, 0x995D_C9BB_DF19_39FA, .max, 1] {
            for count in counts {
                let expected = zeros.withUnsafeBytes { CRC.crc64(UnsafeRawBufferPointer(rebasing: $0[..<count]), previous: previous) }
                #expect(CRC.crc64(zeros: UInt64(count), previous: previous) == expected, "\(count) zeros after \(previous)")
            }
        }
        // Data, a hole of 5 MiB, data: as if it had all been read.
        let head = TestData.random(1000, seed: 3)
        let tail = TestData.random(777, seed: 4)
        let hole = 5 << 20
        let whole = head + [UInt8](repeating: 0, count: hole) + tail
        let skipped = CRC.crc64(tail, previous: CRC.crc64(zeros: UInt64(hole), previous: CRC.crc64(head)))
        #expect(skipped == CRC.crc64(whole))
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
