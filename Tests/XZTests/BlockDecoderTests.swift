import Foundation
import TestSupport
import Testing
import XZ

@Suite(.background) struct BlockDecoderTests {
    private static func makeBlock(_ input: [UInt8], preset: Int = 1) throws -> EncodedBlock {
        let encoder = try BlockEncoder(preset: preset, maxChunkSize: max(input.count, 1))
        return try input.withUnsafeBytes { try encoder.encode($0) }
    }

    private func decodeAll(_ bytes: [UInt8], check: XZCheck = .crc64, fileOffset: UInt64 = 0) throws -> [UInt8] {
        var out: [UInt8] = []
        _ = try bytes.withUnsafeBytes { block in
            try BlockDecoder().decode(block: block, check: check, fileOffset: fileOffset) { out.append(contentsOf: $0) }
        }
        return out
    }

    @Test func decodesInSlices() throws {
        let input = TestData.mild(1 << 20, seed: 30)
        let block = try Self.makeBlock(input)
        var slices = 0
        var out: [UInt8] = []
        let count = try block.bytes.withUnsafeBytes { bytes in
            try BlockDecoder().decode(block: bytes, check: .crc64) { slice in
                slices += 1
                #expect(slice.count <= 256 * 1024)
                out.append(contentsOf: slice)
            }
        }
        #expect(count == UInt64(input.count))
        #expect(out == input)
        #expect(slices >= 4)
    }

    @Test func extraBytesAfterTheBlockAreIgnored() throws {
        let input = TestData.mild(10_000, seed: 31)
        let block = try Self.makeBlock(input)
        #expect(try decodeAll(block.bytes + [0x00, 0x00, 0x01, 0xFF] + TestData.random(100)) == input)
    }

    @Test(arguments: [UInt64(0), 1, 1000, 262_144, 300_000, 600_000])
    func stopAfterStopsEarly(stop: UInt64) throws {
        let input = TestData.mild(500_000, seed: 32)
        let block = try Self.makeBlock(input)
        var out: [UInt8] = []
        let delivered = try block.bytes.withUnsafeBytes { bytes in
            try BlockDecoder().decode(block: bytes, check: .crc64, stopAfter: stop) { out.append(contentsOf: $0) }
        }
        let expected = min(stop, UInt64(input.count))
        #expect(delivered == expected)
        #expect(out == Array(input[..<Int(expected)]))
    }

    @Test func stopAfterNeedsOnlyThePrefix() throws {
        // With stopAfter the caller may pass a cut-off block; it decodes as far as it must.
        let input = TestData.mild(1 << 20, seed: 33)
        let block = try Self.makeBlock(input)
        let prefix = Array(block.bytes[..<(block.bytes.count / 2)])
        var out: [UInt8] = []
        let delivered = try prefix.withUnsafeBytes { bytes in
            try BlockDecoder().decode(block: bytes, check: .crc64, stopAfter: 100_000) { out.append(contentsOf: $0) }
        }
        #expect(delivered == 100_000)
        #expect(out == Array(input[..<100_000]))
    }

    @Test func cancellationIsPrompt() throws {
        let input = TestData.mild(8 << 20, seed: 34)
        let block = try Self.makeBlock(input, preset: 0)
        let clock = ContinuousClock()
        // Cancellation is requested while the first slice is being delivered.
        var cancelAt: ContinuousClock.Instant?
        var delivered = 0
        var checksAfterCancel = 0
        #expect(throws: CancellationError.self) {
            try block.bytes.withUnsafeBytes { bytes in
                try BlockDecoder().decode(
                    block: bytes, check: .crc64,
                    isCancelled: {
                        guard let cancelAt, clock.now >= cancelAt else { return false }
                        checksAfterCancel += 1
                        return true
                    },
                    output: { slice in
                        delivered += slice.count
                        if cancelAt == nil { cancelAt = clock.now }
                    })
            }
        }
        let latency = clock.now - (try #require(cancelAt))
        // Structural, whatever the machine's load: it stops at the first check that sees the
        // cancellation, having delivered at most one slice.
        #expect(checksAfterCancel == 1)
        #expect(delivered > 0)
        #expect(delivered <= 256 * 1024)
        // A generous bound besides: decoding one 256 KiB slice takes milliseconds.
        #expect(latency < .seconds(5), "cancellation took \(latency)")
    }

    @Test func cancellationIsCheckedBetweenSlices() throws {
        let input = TestData.repetitive(1 << 20, seed: 45)
        let block = try Self.makeBlock(input, preset: 0)
        var checks = 0
        let count = try block.bytes.withUnsafeBytes { bytes in
            try BlockDecoder().decode(
                block: bytes, check: .crc64,
                isCancelled: {
                    checks += 1
                    return false
                }
            ) { _ in }
        }
        #expect(count == 1 << 20)
        // Once before starting, then between output slices of 256 KiB.
        #expect(checks >= 4)
        #expect(checks <= 6)
    }

    @Test func flippedDataByteIsDataError() throws {
        let input = TestData.mild(200_000, seed: 35)
        let block = try Self.makeBlock(input)
        let info = try block.bytes.withUnsafeBytes { try BlockHeaderInfo.parse($0, check: .crc64) }
        var damaged = block.bytes
        damaged[info.headerSize + 5000] ^= 0x55
        let error = #expect(throws: XZError.self) { _ = try decodeAll(damaged, fileOffset: 1000) }
        #expect(error?.code == .data)
        let offset = try #require(error?.offset)
        #expect(offset >= 1000 + UInt64(info.headerSize))
        #expect(offset <= 1000 + UInt64(block.bytes.count))
        #expect(error?.message.isEmpty == false)
    }

    @Test func flippedCheckByteIsCheckMismatch() throws {
        let input = TestData.mild(20_000, seed: 36)
        let block = try Self.makeBlock(input)
        var damaged = block.bytes
        damaged[damaged.count - 3] ^= 0x01
        let error = #expect(throws: XZError.self) { _ = try decodeAll(damaged, fileOffset: 12) }
        #expect(error?.code == .data)
        #expect(error?.message.contains("check mismatch") == true)
        #expect(error?.offset == 12 + UInt64(damaged.count - 8))
    }

    @Test func flippedHeaderByteIsDataError() throws {
        let block = try Self.makeBlock(TestData.mild(20_000, seed: 37))
        var damaged = block.bytes
        damaged[2] ^= 0x01
        let error = #expect(throws: XZError.self) { _ = try decodeAll(damaged, fileOffset: 40) }
        #expect(error?.code == .data)
        #expect(error?.offset == 40)
        #expect(error?.message.contains("header") == true)
    }

    @Test func wrongCheckTypeIsAnError() throws {
        let input = TestData.mild(20_000, seed: 38)
        let block = try Self.makeBlock(input)
        // Decoding a CRC64 block as CRC32 reads the wrong number of check bytes.
        #expect(throws: XZError.self) { _ = try decodeAll(block.bytes, check: .crc32) }
    }

    @Test(arguments: [1, 4, 100, 5000])
    func truncatedBlockIsTruncated(cut: Int) throws {
        let input = TestData.mild(30_000, seed: 39)
        let block = try Self.makeBlock(input)
        let short = Array(block.bytes.dropLast(cut))
        let error = #expect(throws: XZError.self) { _ = try decodeAll(short, fileOffset: 12) }
        #expect(error?.code == .truncated)
        #expect(error?.offset != nil)
    }

    @Test func truncatedWhileStreamingIsTruncated() throws {
        // With stopAfter the size pre-check is skipped, so the decoder runs out of input mid-way.
        let input = TestData.mild(30_000, seed: 40)
        let block = try Self.makeBlock(input)
        let short = Array(block.bytes.dropLast(100))
        let error = #expect(throws: XZError.self) {
            try short.withUnsafeBytes { bytes in
                try BlockDecoder().decode(block: bytes, check: .crc64, stopAfter: 1 << 20) { _ in }
            }
        }
        #expect(error?.code == .truncated)
    }

    @Test func indexIndicatorIsNotABlock() throws {
        let index = XZIndexBuilder().encoded()
        let error = #expect(throws: XZError.self) { _ = try decodeAll(index, fileOffset: 77) }
        #expect(error?.code == .data)
        #expect(error?.offset == 77)
        #expect(error?.message.contains("Index") == true)
    }

    @Test func emptyInputIsTruncated() throws {
        let error = #expect(throws: XZError.self) { _ = try decodeAll([]) }
        #expect(error?.code == .truncated)
    }

    @Test func memoryLimitRefusesLargeDictionaries() throws {
        let input = TestData.mild(10_000, seed: 41)
        let encoder = try BlockEncoder(preset: 6, maxChunkSize: 8 << 20)
        let block = try input.withUnsafeBytes { try encoder.encode($0) }
        let error = #expect(throws: XZError.self) {
            try block.bytes.withUnsafeBytes { try BlockDecoder(memoryLimit: 1 << 20).decode(block: $0, check: .crc64) { _ in } }
        }
        #expect(error?.code == .memoryLimit)
        #expect(try block.bytes.withUnsafeBytes { try BlockDecoder(memoryLimit: 16 << 20).decode(block: $0, check: .crc64) } == input)
    }

    @Test func maxOutputIsEnforced() throws {
        let input = TestData.mild(100_000, seed: 42)
        let block = try Self.makeBlock(input)
        let error = #expect(throws: XZError.self) {
            _ = try block.bytes.withUnsafeBytes { try BlockDecoder().decode(block: $0, check: .crc64, maxOutput: 99_999) }
        }
        #expect(error?.code == .memoryLimit)
        #expect(try block.bytes.withUnsafeBytes { try BlockDecoder().decode(block: $0, check: .crc64, maxOutput: 100_000) } == input)
    }

    @Test(.enabled(if: ChildProcess.lookUp("xz") != nil, "xz is not installed"))
    func decodesBlocksWithoutSizesInTheirHeaders() throws {
        // Single-threaded xz writes headers without sizes; the array API must still bound output.
        let input = TestData.mild(100_000, seed: 43)
        let file = try Tool.xz(["-6"], input)
        let index = try readIndex(file)
        let record = try #require(index.blocks.first)
        let bytes = Array(file[Int(record.compressedOffset)..<Int(record.compressedOffset + record.totalSize)])
        let info = try bytes.withUnsafeBytes { try BlockHeaderInfo.parse($0, check: .crc64) }
        #expect(info.uncompressedSize == nil)
        #expect(try bytes.withUnsafeBytes { try BlockDecoder().decode(block: $0, check: .crc64) } == input)
        let error = #expect(throws: XZError.self) {
            _ = try bytes.withUnsafeBytes { try BlockDecoder().decode(block: $0, check: .crc64, maxOutput: 50_000) }
        }
        #expect(error?.code == .memoryLimit)
    }

    @Test(.enabled(if: ChildProcess.lookUp("xz") != nil, "xz is not installed"))
    func decodesEveryBlockXZWrites() throws {
        let input = TestData.mild(1 << 20, seed: 44)
        let file = try Tool.xz(["-T2", "--block-size=64KiB", "-6"], input)
        let index = try readIndex(file)
        #expect(index.blocks.count == 16)
        let decoder = BlockDecoder()
        var out: [UInt8] = []
        for (i, record) in index.blocks.enumerated() {
            let block = try decodeBlock(decoder, file, record, check: index.check(ofBlock: i))
            #expect(block.count == Int(record.uncompressedSize))
            out += block
        }
        #expect(out == input)
    }

    // MARK: - In pieces

    /// Feeds `block` after its header in pieces of `inputPiece` bytes, asking for at most
    /// `maxOutput` bytes per call; returns the output and the largest amount one call delivered.
    private func decodeInPieces(
        _ block: [UInt8], uncompressedSize: UInt64? = nil, inputPiece: Int,
        maxOutput: Int
    ) throws -> (bytes: [UInt8], largestCall: Int) {
        let decoder = BlockDecoder()
        let headerSize = try block.withUnsafeBytes { try decoder.begin(header: $0, check: .crc64, uncompressedSize: uncompressedSize) }
        var out: [UInt8] = []
        var largest = 0
        var position = headerSize
        var pending: [UInt8] = []
        while !decoder.isFinished {
            if pending.isEmpty {
                let end = min(block.count, position + inputPiece)
                guard position < end else { throw XZError(code: .truncated, message: "test ran out of input") }
                pending = Array(block[position..<end])
                position = end
            }
            var delivered = 0
            let (consumed, _) = try pending.withUnsafeBytes { raw in
                try decoder.decode(raw, maxOutput: maxOutput) { slice in
                    delivered += slice.count
                    out.append(contentsOf: slice)
                }
            }
            pending.removeFirst(consumed)
            largest = max(largest, delivered)
        }
        return (out, largest)
    }

    @Test(arguments: [(1, 1000), (7, 100_000), (4096, 1 << 20), (1 << 20, 300_000)])
    func decodesInPiecesOfInputAndOutput(inputPiece: Int, maxOutput: Int) throws {
        let input = TestData.mild(700_000, seed: 46)
        let block = try Self.makeBlock(input)
        let (out, largest) = try decodeInPieces(
            block.bytes, uncompressedSize: UInt64(input.count),
            inputPiece: inputPiece, maxOutput: maxOutput)
        #expect(out == input)
        #expect(largest <= maxOutput, "one call delivered \(largest) bytes, more than the \(maxOutput) asked for")
    }

    @Test func aBlockOfZerosComesOutAsSlowlyAsAsked() throws {
        // 64 MiB of zeros compress to a few KiB: one piece of input holds all of it, yet each
        // call delivers no more than asked.
        let block = try Self.makeBlock([UInt8](repeating: 0, count: 64 << 20), preset: 0)
        #expect(block.bytes.count < 64 << 10)
        let decoder = BlockDecoder()
        let headerSize = try block.bytes.withUnsafeBytes { try decoder.begin(header: $0, check: .crc64) }
        let body = Array(block.bytes[headerSize...])
        var total = 0
        var calls = 0
        var input = body[...]
        while !decoder.isFinished {
            var delivered = 0
            let (consumed, _) = try Array(input).withUnsafeBytes { raw in
                try decoder.decode(raw, maxOutput: 1 << 20) { delivered += $0.count }
            }
            input = input.dropFirst(consumed)
            #expect(delivered <= 1 << 20)
            total += delivered
            calls += 1
        }
        #expect(total == 64 << 20)
        #expect(calls >= 64)
        #expect(decoder.deliveredBytes == 64 << 20)
    }

    @Test func theExpectedSizeIsEnforcedWhenTheHeaderDeclaresNone() throws {
        // A header without sizes (as single-threaded xz writes) gives the decoder nothing to
        // check the output against but the size the caller expects from the xz Index.
        let input = TestData.mild(100_000, seed: 47)
        let encoded = try Self.makeBlock(input)
        let info = try encoded.bytes.withUnsafeBytes { try BlockHeaderInfo.parse($0, check: .crc64) }
        let data = Array(encoded.bytes[info.headerSize...])
        // Flags 0: one filter, no sizes; LZMA2 with a 256 KiB dictionary (0x0C), more than the
        // encoder used for 100 KB.
        var header: [UInt8] = [0x02, 0x00, 0x21, 0x01, 0x0C, 0, 0, 0]
        header += withUnsafeBytes(of: CRC.crc32(header).littleEndian) { Array($0) }
        let block = header + data
        #expect(try decodeInPieces(block, uncompressedSize: 100_000, inputPiece: 4096, maxOutput: 1 << 20).bytes == input)

        let smaller = #expect(throws: XZError.self) {
            _ = try decodeInPieces(block, uncompressedSize: 60_000, inputPiece: 4096, maxOutput: 1 << 20)
        }
        #expect(smaller?.code == .data)
        #expect(smaller?.message.contains("more than the 60000 bytes") == true, "\(String(describing: smaller))")
        let larger = #expect(throws: XZError.self) {
            _ = try decodeInPieces(block, uncompressedSize: 1 << 50, inputPiece: 4096, maxOutput: 1 << 20)
        }
        #expect(larger?.code == .data)
        #expect(larger?.message.contains("decodes to 100000 bytes") == true, "\(String(describing: larger))")
    }

    @Test func aHeaderThatDisagreesWithTheExpectedSizeIsRefusedAtOnce() throws {
        let block = try Self.makeBlock(TestData.mild(10_000, seed: 48))
        let error = #expect(throws: XZError.self) {
            _ = try block.bytes.withUnsafeBytes {
                try BlockDecoder().begin(header: $0, check: .crc64, fileOffset: 96, uncompressedSize: 1 << 50)
            }
        }
        #expect(error?.code == .data)
        #expect(error?.offset == 96)
    }

    @Test func decodingBeforeBeginIsAProgramError() throws {
        let error = #expect(throws: XZError.self) {
            _ = try [UInt8](repeating: 1, count: 10).withUnsafeBytes { try BlockDecoder().decode($0) { _ in } }
        }
        #expect(error?.code == .program)
    }
}
