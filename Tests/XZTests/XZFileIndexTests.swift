import TestSupport
import Testing
import XZ

@Suite(.background) struct XZFileIndexTests {
    /// Four blocks of ours: compressed, stored, empty, compressed.
    private static func ourFile() throws -> (file: [UInt8], parts: [[UInt8]], blocks: [EncodedBlock]) {
        let parts = [TestData.mild(100_000, seed: 90), TestData.random(30_000, seed: 91), [], TestData.mild(5_000, seed: 92)]
        let encoder = try BlockEncoder(preset: 1, maxChunkSize: 100_000)
        let blocks = try parts.map { part in try part.withUnsafeBytes { try encoder.encode($0) } }
        return (try assembleStream(blocks), parts, blocks)
    }

    @Test func readsOurStream() throws {
        let (file, parts, blocks) = try Self.ourFile()
        let index = try readIndex(file)
        #expect(index.fileSize == UInt64(file.count))
        #expect(index.streams.count == 1)
        #expect(index.streams[0].check == .crc64)
        #expect(index.streams[0].headerOffset == 0)
        #expect(index.streams[0].padding == 0)
        #expect(index.blocks.count == 4)
        #expect(index.uncompressedSize == UInt64(parts.reduce(0) { $0 + $1.count }))
        var compressedOffset = UInt64(StreamHeader.size)
        var uncompressedOffset: UInt64 = 0
        for (record, block) in zip(index.blocks, blocks) {
            #expect(record.compressedOffset == compressedOffset)
            #expect(record.uncompressedOffset == uncompressedOffset)
            #expect(record.unpaddedSize == block.unpaddedSize)
            #expect(record.totalSize == UInt64(block.bytes.count))
            #expect(record.uncompressedSize == block.uncompressedSize)
            compressedOffset += record.totalSize
            uncompressedOffset += record.uncompressedSize
        }
        let decoder = BlockDecoder()
        for (i, record) in index.blocks.enumerated() {
            #expect(try decodeBlock(decoder, file, record, check: index.check(ofBlock: i)) == parts[i])
        }
    }

    @Test func locateSkipsEmptyBlocks() throws {
        let (file, _, _) = try Self.ourFile()
        let index = try readIndex(file)
        #expect(index.locate(uncompressedOffset: 0) == 0)
        #expect(index.locate(uncompressedOffset: 99_999) == 0)
        #expect(index.locate(uncompressedOffset: 100_000) == 1)
        #expect(index.locate(uncompressedOffset: 129_999) == 1)
        // Block 2 is empty: offset 130_000 is the first byte of block 3.
        #expect(index.locate(uncompressedOffset: 130_000) == 3)
        #expect(index.locate(uncompressedOffset: 134_999) == 3)
        #expect(index.locate(uncompressedOffset: 135_000) == nil)
        #expect(index.locate(uncompressedOffset: .max) == nil)
    }

    @Test(.enabled(if: ChildProcess.lookUp("xz") != nil, "xz is not installed"))
    func readsSingleBlockXZ() throws {
        let input = TestData.mild(300_000, seed: 93)
        let file = try Tool.xz(["-6"], input)
        let index = try readIndex(file)
        #expect(index.blocks.count == 1)
        #expect(index.uncompressedSize == 300_000)
        #expect(index.blocks[0].compressedOffset == 12)
        #expect(try decodeBlock(BlockDecoder(), file, index.blocks[0], check: .crc64) == input)
    }

    @Test(.enabled(if: ChildProcess.lookUp("xz") != nil, "xz is not installed"))
    func readsMultiBlockXZAndLocates() throws {
        let input = TestData.mild(1 << 20, seed: 94)
        let file = try Tool.xz(["-T2", "--block-size=64KiB", "-6"], input)
        let index = try readIndex(file)
        #expect(index.blocks.count == 16)
        #expect(index.uncompressedSize == 1 << 20)
        for offset: UInt64 in [0, 65_535, 65_536, 500_000, 1 << 19, (1 << 20) - 1] {
            let i = try #require(index.locate(uncompressedOffset: offset))
            #expect(i == Int(offset / 65_536))
            let record = index.blocks[i]
            let block = try decodeBlock(BlockDecoder(), file, record, check: index.check(ofBlock: i))
            #expect(block[Int(offset - record.uncompressedOffset)] == input[Int(offset)])
        }
        #expect(index.locate(uncompressedOffset: 1 << 20) == nil)
    }

    @Test(.enabled(if: ChildProcess.lookUp("xz") != nil, "xz is not installed"))
    func readsConcatenatedStreamsWithPadding() throws {
        let a = TestData.mild(70_000, seed: 95)
        let b = TestData.mild(10_000, seed: 96)
        let c = TestData.mild(150_000, seed: 97)
        let fa = try Tool.xz(["-T2", "--block-size=64KiB", "-1"], a)
        let fb = try Tool.xz(["-1", "--check=crc32"], b)
        let fc = try Tool.xz(["-1"], c)
        let file = fa + [0, 0, 0, 0] + fb + fc + [UInt8](repeating: 0, count: 8)
        let index = try readIndex(file)
        #expect(index.streams.count == 3)
        #expect(index.streams.map(\.headerOffset) == [0, UInt64(fa.count + 4), UInt64(fa.count + 4 + fb.count)])
        #expect(index.streams.map(\.padding) == [4, 0, 8])
        #expect(index.streams.map(\.check) == [.crc64, .crc32, .crc64])
        #expect(index.streams.map(\.uncompressedSize) == [70_000, 10_000, 150_000])
        #expect(index.blocks.count == 4)
        #expect(index.uncompressedSize == 230_000)
        #expect(index.check(ofBlock: 2) == .crc32)
        #expect(index.check(ofBlock: 3) == .crc64)
        #expect(index.check(ofBlock: 4) == .none)
        #expect(index.locate(uncompressedOffset: 80_000) == 3)
        #expect(index.blocks[3].uncompressedOffset == 80_000)
        let decoder = BlockDecoder()
        var out: [UInt8] = []
        for (i, record) in index.blocks.enumerated() {
            out += try decodeBlock(decoder, file, record, check: index.check(ofBlock: i))
        }
        #expect(out == a + b + c)
    }

    @Test func flippedIndexByteIsCorruptIndex() throws {
        let (file, _, _) = try Self.ourFile()
        let index = try readIndex(file)
        let indexStart = file.count - 12 - Int(index.streams[0].indexSize)
        for position in indexStart..<(file.count - 12) {
            var damaged = file
            damaged[position] ^= 0x04
            let error = #expect(throws: XZError.self) { _ = try readIndex(damaged) }
            #expect(error?.code == .corruptIndex || error?.code == .memoryLimit, "byte \(position): \(String(describing: error))")
            #expect(error?.offset != nil)
        }
    }

    @Test func lyingFooterCannotForceHugeReads() throws {
        let (file, _, _) = try Self.ourFile()
        for indexSize: UInt64 in [UInt64(file.count), 1 << 34, 1 << 30, UInt64(file.count - 24)] {
            var damaged = file
            damaged.replaceSubrange((file.count - 12)..., with: StreamFooter.encode(check: .crc64, indexSize: indexSize))
            let log = ReadLog()
            let error = #expect(throws: XZError.self) { _ = try readIndex(damaged, largestRead: log) }
            #expect(error?.code == .corruptIndex)
            #expect(error?.message.isEmpty == false)
            #expect(log.largest <= 64 * 1024)
        }
    }

    @Test func hugeBlockCountIsRefusedBeforeAllocating() throws {
        // A valid-looking index claiming 2^40 records in 16 bytes.
        var body: [UInt8] = [0x00, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20]
        while body.count % 4 != 0 { body.append(0) }
        body += withUnsafeBytes(of: CRC.crc32(body).littleEndian, Array.init)
        let file = StreamHeader.encode(check: .crc64) + body + StreamFooter.encode(check: .crc64, indexSize: UInt64(body.count))
        let error = #expect(throws: XZError.self) { _ = try readIndex(file) }
        #expect(error?.code == .corruptIndex)
        #expect(error?.message.contains("claims") == true)
        let limited = #expect(throws: XZError.self) { _ = try readIndex(file, maxBlocks: 1000) }
        #expect(limited?.code == .corruptIndex)
    }

    @Test func maxBlocksIsEnforced() throws {
        let (file, _, _) = try Self.ourFile()
        let error = #expect(throws: XZError.self) { _ = try readIndex(file, maxBlocks: 3) }
        #expect(error?.code == .memoryLimit)
        #expect(try readIndex(file, maxBlocks: 4).blocks.count == 4)
    }

    @Test func streamCountIsCapped() throws {
        // Empty streams hold no blocks, so the block budget alone would never stop them.
        let empty = try assembleStream([])
        let file = Array([[UInt8]](repeating: empty, count: 10).joined())
        #expect(try readIndex(file, maxBlocks: 10).streams.count == 10)
        let error = #expect(throws: XZError.self) { _ = try readIndex(file, maxBlocks: 9) }
        #expect(error?.code == .memoryLimit)
    }

    @Test func truncatedFilesAreRefused() throws {
        let (file, _, _) = try Self.ourFile()
        for cut in [1, 4, 12, 100, file.count - 40] {
            let error = #expect(throws: XZError.self) { _ = try readIndex(Array(file.dropLast(cut))) }
            #expect(error?.code == .truncated || error?.code == .corruptIndex, "cut \(cut): \(String(describing: error))")
            #expect(error?.offset != nil)
        }
    }

    @Test func nonXZFilesAreFormatErrors() throws {
        for file in [[], Array("hello, world, this is not xz at all".utf8), [UInt8](repeating: 0, count: 64)] {
            let error = #expect(throws: XZError.self) { _ = try readIndex(file) }
            #expect(error?.code == .format)
        }
    }

    @Test func shortReadsAreTruncated() throws {
        let (file, _, _) = try Self.ourFile()
        let error = #expect(throws: XZError.self) {
            _ = try XZFileIndex.read(fileSize: UInt64(file.count)) { offset, count in
                Array(file[Int(offset)..<(Int(offset) + count)].dropLast())
            }
        }
        #expect(error?.code == .truncated)
    }

    @Test func randomDamageNeverCrashes() throws {
        let (file, _, _) = try Self.ourFile()
        let tail = Int(try readIndex(file).streams[0].indexSize) + StreamFooter.size
        var generator = TestData(seed: 98)
        var failures = 0
        for _ in 0..<300 {
            var damaged = file
            // Damage the index and footer, which CRC32s protect completely.
            for _ in 0..<Int(1 + generator.next() % 3) {
                let position = file.count - 1 - Int(generator.next() % UInt64(tail))
                damaged[position] ^= UInt8(truncatingIfNeeded: generator.next() % 255 + 1)
            }
            do {
                _ = try readIndex(damaged)
            } catch let error as XZError {
                #expect(!error.message.isEmpty)
                failures += 1
            }
        }
        #expect(failures == 300)
    }
}
