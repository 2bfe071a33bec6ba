import Tar
import TestSupport
import Testing

/// The ustar field codecs (UstarBlock.swift is internal), tested through encoded blocks and
/// `TarHeader.decode(ustarBlock:offset:)` on hand-built blocks.
@Suite(.background) struct UstarBlockTests {
    private func decode(_ block: [UInt8], offset: UInt64 = 0) throws -> TarHeader {
        try block.withUnsafeBytes { try TarHeader.decode(ustarBlock: $0, offset: offset) }
    }

    @Test func ustarFieldsHaveExactOctalWidthsAndChecksum() throws {
        let header = TarHeader(
            path: "a/b.txt", kind: .regular, size: 512, mode: 0o755, uid: 1000, gid: 100,
            mtime: .init(seconds: 1_700_000_000), userName: "root", groupName: "wheel"
        )
        let block = try TarEncoder.encode(header)
        #expect(block.count == 512)
        #expect(field(block, 0, 100) == "a/b.txt")
        #expect(rawField(block, 100, 8) == Array("0000755\0".utf8))
        #expect(rawField(block, 108, 8) == Array("0001750\0".utf8))
        #expect(rawField(block, 116, 8) == Array("0000144\0".utf8))
        #expect(rawField(block, 124, 12) == Array("00000001000\0".utf8))
        #expect(rawField(block, 136, 12) == Array("14524770400\0".utf8))
        #expect(block[156] == UInt8(ascii: "0"))
        #expect(rawField(block, 257, 8) == Array("ustar\000".utf8))
        #expect(field(block, 265, 32) == "root")
        #expect(field(block, 297, 32) == "wheel")
        #expect(rawField(block, 329, 8) == Array("0000000\0".utf8))
        #expect(rawField(block, 337, 8) == Array("0000000\0".utf8))
        #expect(block[345..<512].allSatisfy { $0 == 0 })
        // Checksum: six octal digits, NUL, space; value recomputed from scratch.
        #expect(block[154] == 0 && block[155] == UInt8(ascii: " "))
        #expect(octalValue(block, 148, 6) == independentChecksum(block))
    }

    @Test func gnuBase256NumbersAreRead() throws {
        var block = RawBlock(name: "big", magic: .gnu)
        // size = 2^40 + 5, base-256: 0x80 then big-endian bytes.
        block.setBytes(124, [0x80, 0, 0, 0, 0, 0, 0x01, 0, 0, 0, 0, 5])
        // uid 3000000 in an 8-byte base-256 field.
        block.setBytes(108, [0x80, 0, 0, 0, 0, 0x2D, 0xC6, 0xC0])
        // mtime -1 (two's complement).
        block.setBytes(136, [UInt8](repeating: 0xFF, count: 12))
        block.sealChecksum()
        let header = try decode(block.bytes)
        #expect(header.size == (1 << 40) + 5)
        #expect(header.uid == 3_000_000)
        #expect(header.mtime == TarTimestamp(seconds: -1))
    }

    /// Some historic writers summed signed chars; GNU tar accepts either sum, so do we.
    @Test func signedChecksumIsAccepted() throws {
        var block = RawBlock(name: "caf\u{E9}.txt")
        var signed = 0
        for (index, byte) in block.bytes.enumerated() {
            signed += (148..<156).contains(index) ? 32 : Int(Int8(bitPattern: byte))
        }
        let text = String(signed, radix: 8)
        block.set(148, String(repeating: "0", count: 6 - text.count) + text)
        #expect(UInt64(signed) != independentChecksum(block.bytes))
        #expect(try decode(block.bytes).path == "caf\u{E9}.txt")
    }

    @Test func nonOctalSizeIsBadField() throws {
        var block = RawBlock(name: "x")
        block.set(124, "0000000009x")
        block.sealChecksum()
        let error = try #require(tarError { _ = try decode(block.bytes, offset: 512) })
        #expect(error.code == .badField)
        #expect(error.offset == 512)
        #expect(error.message.contains("size"))
    }

    @Test func negativeBase256SizeIsBadField() throws {
        var block = RawBlock(name: "x", magic: .gnu)
        block.setBytes(124, [UInt8](repeating: 0xFF, count: 12))
        block.sealChecksum()
        #expect(tarError { _ = try decode(block.bytes) }?.code == .badField)
    }

    @Test func emptyChecksumFieldIsRejected() throws {
        var block = RawBlock(name: "x")
        block.setBytes(148, [UInt8](repeating: 0, count: 8))
        #expect(tarError { _ = try decode(block.bytes) }?.code == .badChecksum)
    }

    @Test func fileTypeBitsInModeAreDropped() throws {
        var block = RawBlock(name: "m")
        block.set(100, "0100755")
        block.sealChecksum()
        #expect(try decode(block.bytes).mode == 0o755)
    }

    /// Invalid UTF-8 in an old-style name keeps its bytes, each as its escape scalar.
    @Test func invalidUTF8NameKeepsItsBytes() throws {
        var block = RawBlock(name: "")
        block.setBytes(0, [0x66, 0xFF, 0xFE, 0x67])
        block.sealChecksum()
        let header = try decode(block.bytes)
        #expect(header.path == "f\u{10FFFF}\u{10FFFE}g")
        #expect(RawName.encode(header.path) == [0x66, 0xFF, 0xFE, 0x67])
    }

    /// A string field ends at its first NUL: bytes after it (here invalid UTF-8 and a "/..")
    /// are not part of the name.
    @Test func stringFieldsEndAtTheFirstNul() throws {
        var block = RawBlock(name: "")
        block.setBytes(0, Array("ok".utf8) + [0, 0xFF] + Array("/..".utf8))
        block.setBytes(345, Array("pre".utf8) + [0, 0xFE, 0x2F])
        block.sealChecksum()
        let header = try decode(block.bytes)
        #expect(header.path == "pre/ok")
    }
    /// The checksum on random blocks, high bits and all: the unsigned sum and the signed one (as
    /// some historic writers stored it) pass, one more than either is a bad checksum, whatever
    /// the other fields then say.
    @Test func checksumOfRandomBlocks() {
        var rng = SeededGenerator(seed: 0xC4EC5)
        func isBadChecksum(_ block: [UInt8]) -> Bool {
            do {
                _ = try decode(block)
                return false
            } catch {
                return (error as? TarError)?.code == .badChecksum
            }
        }
        for round in 0..<3000 {
            // Some blocks mostly high bytes, some mostly low, some mixed.
            let high = [0.0, 0.5, 0.95][round % 3]
            var block = (0..<512).map { _ in
                Double.random(in: 0..<1, using: &rng) < high
                    ? UInt8.random(in: 0x80...0xFF, using: &rng) : UInt8.random(in: 0...0x7F, using: &rng)
            }
            var unsigned = 0
            var signed = 0
            for (index, byte) in block.enumerated() {
                unsigned += (148..<156).contains(index) ? 32 : Int(byte)
                signed += (148..<156).contains(index) ? 32 : Int(Int8(bitPattern: byte))
            }
            func stored(_ sum: Int) -> [UInt8] {
                let text = String(sum, radix: 8)
                return Array((String(repeating: "0", count: max(0, 6 - text.count)) + text).utf8) + [0, 32]
            }
            for sum in [unsigned, signed] where sum >= 0 {
                block.replaceSubrange(148..<156, with: stored(sum))
                #expect(!isBadChecksum(block), "sum \(sum) refused (unsigned \(unsigned), signed \(signed))")
                if sum + 1 != unsigned && sum + 1 != signed {
                    block.replaceSubrange(148..<156, with: stored(sum + 1))
                    #expect(isBadChecksum(block), "sum \(sum + 1) accepted (unsigned \(unsigned), signed \(signed))")
                }
            }
        }
    }
}
