import CLZMA
import Foundation
import TestSupport
import Testing

@testable import XZ

@Suite @MainActor struct BlockEncoderTests {
    private func encode(_ input: [UInt8], preset: Int, maxChunkSize: Int? = nil) throws -> EncodedBlock {
        let encoder = try BlockEncoder(preset: preset, maxChunkSize: maxChunkSize ?? max(input.count, 1))
        return try input.withUnsafeBytes { try encoder.encode($0) }
    }

    private func decode(_ block: EncodedBlock) throws -> [UInt8] {
        try block.bytes.withUnsafeBytes { try BlockDecoder().decode(block: $0, check: .crc64) }
    }

    /// The LZMA2 dictionary size the block's header records.
    private func dictionarySize(_ block: EncodedBlock) throws -> UInt32? {
        let options = BlockOptions()
        try block.bytes.withUnsafeBytes { try options.decodeHeader($0, check: .crc64, fileOffset: 0) }
        guard options.filters[0].id == amk_lzma_filter_lzma2, let raw = options.filters[0].options else { return nil }
        return raw.assumingMemoryBound(to: lzma_options_lzma.self).pointee.dict_size
    }

    @Test(arguments: [0, 1, 6], [0, 1, 256 * 1024])
    func roundTrip(preset: Int, size: Int) throws {
        let input = TestData.mild(size, seed: UInt64(size) + 3)
        let block = try encode(input, preset: preset)
        #expect(block.uncompressedSize == UInt64(size))
        #expect(try decode(block) == input)
        if size == 256 * 1024 {
            #expect(!block.isStored)
            #expect(block.bytes.count < size * 2 / 3)
        }
    }

    @Test func preset9OnSmallInput() throws {
        let input = TestData.mild(40_000, seed: 11)
        let block = try encode(input, preset: 9)
        #expect(!block.isStored)
        #expect(try decode(block) == input)
    }

    @Test(arguments: [0, 1])
    func sixteenMiBPlusOne(preset: Int) throws {
        let input = TestData.repetitive(16 << 20 + 1, seed: 5)
        let block = try encode(input, preset: preset)
        #expect(!block.isStored)
        #expect(block.bytes.count < input.count / 10)
        #expect(block.uncompressedSize == UInt64(input.count))
        #expect(try decode(block) == input)
    }

    @Test func incompressibleDataIsStored() throws {
        let input = TestData.random(300_000, seed: 12)
        let block = try encode(input, preset: 6)
        #expect(block.isStored)
        // Five 64 KiB chunks of stored LZMA2: 3 bytes each, the end marker, header and check.
        #expect(block.bytes.count <= input.count + 5 * 3 + 1 + 16 + 3 + 8)
        #expect(try decode(block) == input)
    }

    @Test func storedEncodingRoundTrips() throws {
        let encoder = try BlockEncoder(preset: 6, maxChunkSize: 1 << 20)
        for size in [0, 1, 65_536, 65_537, 200_000] {
            let input = TestData.mild(size, seed: UInt64(size))
            let block = try input.withUnsafeBytes { try encoder.encodeStored($0) }
            #expect(block.isStored)
            #expect(block.bytes.count == Int((block.unpaddedSize + 3) & ~3))
            #expect(try decode(block) == input)
        }
    }

    @Test func emptyInput() throws {
        let block = try encode([], preset: 6)
        #expect(block.uncompressedSize == 0)
        #expect(try decode(block) == [])
    }

    @Test func headerCarriesBothSizes() throws {
        let input = TestData.mild(100_000, seed: 13)
        let block = try encode(input, preset: 1)
        let info = try block.bytes.withUnsafeBytes { try BlockHeaderInfo.parse($0, check: .crc64) }
        #expect(info.uncompressedSize == 100_000)
        #expect(info.compressedSize == block.unpaddedSize - UInt64(info.headerSize) - 8)
        #expect(info.totalSize(check: .crc64) == UInt64(block.bytes.count))
    }

    /// The header room is sized for a stored-size block; when the compressed size needs a shorter
    /// varint and the header shrinks by a word, the data is moved down to meet it.
    @Test(arguments: [(124, false), (127, false), ((1 << 21) - 60, true)])
    func headerShrinksWhenDataCompressesWell(size: Int, mild: Bool) throws {
        let input = mild ? TestData.mild(size, seed: 23) : [UInt8](repeating: 0x61, count: size)
        let block = try encode(input, preset: 0)
        #expect(!block.isStored)
        let info = try block.bytes.withUnsafeBytes { try BlockHeaderInfo.parse($0, check: .crc64) }
        // 10 fixed bytes plus both size varints, rounded up to a multiple of four.
        #expect(info.headerSize == (mild ? 16 : 12))
        #expect(UInt64(block.bytes.count) == (block.unpaddedSize + 3) & ~3)
        #expect(try decode(block) == input)
    }

    @Test func dictionaryFollowsChunkSize() throws {
        let input = TestData.mild(10_000, seed: 14)
        #expect(try dictionarySize(encode(input, preset: 6, maxChunkSize: 1 << 20)) == 1 << 20)
        #expect(try dictionarySize(encode(input, preset: 6, maxChunkSize: 100)) == 4096)
        #expect(try dictionarySize(encode(input, preset: 0, maxChunkSize: 16 << 20)) == 256 << 10)
        #expect(try dictionarySize(encode(input, preset: 9, maxChunkSize: 64 << 20)) == 64 << 20)
    }

    @Test func sliceSizeDoesNotChangeOutput() throws {
        let input = TestData.mild(300_000, seed: 15)
        let encoder = try BlockEncoder(preset: 1, maxChunkSize: input.count)
        let whole = try input.withUnsafeBytes { try encoder.encode($0, sliceSize: 1 << 20) }
        let sliced = try input.withUnsafeBytes { try encoder.encode($0, sliceSize: 1000) }
        #expect(whole.bytes == sliced.bytes)
    }

    @Test func reusedEncoderGivesSameBlocks() throws {
        let a = TestData.mild(50_000, seed: 16)
        let b = TestData.mild(70_000, seed: 17)
        let encoder = try BlockEncoder(preset: 6, maxChunkSize: 70_000)
        let first = try a.withUnsafeBytes { try encoder.encode($0) }
        _ = try b.withUnsafeBytes { try encoder.encode($0) }
        let again = try a.withUnsafeBytes { try encoder.encode($0) }
        #expect(first.bytes == again.bytes)
        #expect(try decode(again) == a)
    }

    /// The nice length reaches liblzma. Records that share a 24-byte prefix and differ after it,
    /// repeated in a shuffled order: a search that stops at 8 bytes settles for a record with that
    /// prefix, one that goes on to 273 looks for the whole record, so the two encoders choose
    /// different matches and write different streams (were the setting lost, they would be the
    /// same bytes). Which is smaller depends on LZMA's pricing, so only the difference is checked.
    /// Both decode.
    @Test func niceLengthChangesTheSearch() throws {
        var generator = SeededGenerator(seed: 41)
        let prefix = Array("record-with-common-head:".utf8)
        let records = (0..<300).map { _ in prefix + (0..<48).map { _ in UInt8.random(in: 0x61...0x7a, using: &generator) } }
        var input: [UInt8] = records.flatMap { $0 }
        for _ in 0..<3_000 { input += records[Int.random(in: 0..<records.count, using: &generator)] }
        let short = try BlockEncoder(preset: 6, maxChunkSize: input.count, niceLength: 8)
        let long = try BlockEncoder(preset: 6, maxChunkSize: input.count, niceLength: 273)
        let preset = try BlockEncoder(preset: 6, maxChunkSize: input.count)
        #expect(short.niceLength == 8)
        #expect(long.niceLength == 273)
        #expect(preset.niceLength == 64)
        let shortBlock = try input.withUnsafeBytes { try short.encode($0) }
        let longBlock = try input.withUnsafeBytes { try long.encode($0) }
        #expect(shortBlock.bytes != longBlock.bytes)
        #expect(try decode(shortBlock) == input)
        #expect(try decode(longBlock) == input)
    }

    /// A dictionary size caps the preset's and the chunk's, reaches the block header, and shrinks
    /// the match finder's memory.
    @Test func dictionarySizeCapsTheDictionary() throws {
        let input = TestData.mild(10_000, seed: 16)
        let capped = try BlockEncoder(preset: 6, maxChunkSize: 8 << 20, dictionarySize: 6 << 20)
        #expect(capped.dictionarySize == 6 << 20)
        let block = try input.withUnsafeBytes { try capped.encode($0) }
        #expect(try dictionarySize(block) == 6 << 20)
        #expect(try decode(block) == input)
        #expect(try BlockEncoder(preset: 6, maxChunkSize: 1 << 20, dictionarySize: 6 << 20).dictionarySize == 1 << 20, "the chunk caps it")
        #expect(try BlockEncoder(preset: 0, maxChunkSize: 8 << 20, dictionarySize: 6 << 20).dictionarySize == 256 << 10, "the preset's")
        #expect(try BlockEncoder(preset: 6, maxChunkSize: 8 << 20).dictionarySize == 8 << 20)
        let full = try BlockEncoder.memoryUsage(preset: 6, maxChunkSize: 8 << 20)
        let reduced = try BlockEncoder.memoryUsage(preset: 6, maxChunkSize: 8 << 20, dictionarySize: 6 << 20)
        #expect(full - reduced >= 16 << 20, "\(full) against \(reduced)")
        let error = #expect(throws: XZError.self) { try BlockEncoder(maxChunkSize: 1 << 20, dictionarySize: 4095) }
        #expect(error?.code == .options)
    }

    @Test(arguments: [-1, 0, 1, 274])
    func niceLengthOutsideLiblzmasRangeThrows(_ niceLength: Int) throws {
        let error = #expect(throws: XZError.self) { try BlockEncoder(maxChunkSize: 1 << 20, niceLength: niceLength) }
        #expect(error?.code == .options)
        #expect(error?.message.contains("nice length \(niceLength)") == true)
    }

    @Test func badArgumentsThrowOptions() throws {
        for preset in [-1, 10] {
            let error = #expect(throws: XZError.self) { try BlockEncoder(preset: preset, maxChunkSize: 1 << 20) }
            #expect(error?.code == .options)
            #expect(error?.message.contains("\(preset)") == true)
        }
        let negative = #expect(throws: XZError.self) { try BlockEncoder(maxChunkSize: -1) }
        #expect(negative?.code == .options)
        let encoder = try BlockEncoder(maxChunkSize: 10)
        let slice = #expect(throws: XZError.self) {
            try [UInt8](repeating: 1, count: 10).withUnsafeBytes { try encoder.encode($0, sliceSize: 0) }
        }
        #expect(slice?.code == .options)
    }

    @Test func cancellationIsCheckedBetweenSlices() throws {
        let input = TestData.repetitive(8 << 20, seed: 24)
        let encoder = try BlockEncoder(preset: 0, maxChunkSize: input.count)
        var checks = 0
        _ = try input.withUnsafeBytes {
            try encoder.encode(
                $0,
                isCancelled: {
                    checks += 1
                    return false
                })
        }
        // Before the first slice, between each of the 32 slices of 256 KiB, and before finishing.
        #expect(checks == 33)
        checks = 0
        #expect(throws: CancellationError.self) {
            try input.withUnsafeBytes {
                try encoder.encode(
                    $0,
                    isCancelled: {
                        checks += 1
                        return checks == 5
                    })
            }
        }
        #expect(checks == 5)
    }

    @Test func cancellationBeforeStart() throws {
        let encoder = try BlockEncoder(maxChunkSize: 10)
        #expect(throws: CancellationError.self) {
            try [UInt8](repeating: 1, count: 10).withUnsafeBytes { try encoder.encode($0, isCancelled: { true }) }
        }
    }

    @Test func cancellationIsPrompt() throws {
        let input = TestData.mild(8 << 20, seed: 18)
        let encoder = try BlockEncoder(preset: 6, maxChunkSize: input.count)
        let clock = ContinuousClock()
        // Cancellation is requested at a fixed time, whatever the encoder is doing then; the
        // latency is how long it takes to notice (a whole 8 MiB block takes several seconds).
        let cancelAt = clock.now + .milliseconds(50)
        var checks = 0
        var checksAfterCancel = 0
        #expect(throws: CancellationError.self) {
            try input.withUnsafeBytes { bytes in
                try encoder.encode(
                    bytes,
                    isCancelled: {
                        checks += 1
                        guard clock.now >= cancelAt else { return false }
                        checksAfterCancel += 1
                        return true
                    })
            }
        }
        let latency = clock.now - cancelAt
        #expect(checks >= 2)
        // Structural, whatever the machine's load: it stops at the first check that sees the
        // cancellation, so at most one slice is encoded after it.
        #expect(checksAfterCancel == 1)
        // And in time, measured against this machine now: one slice of the same data, encoded
        // alone (a slice is ~0.25 s of CPU at preset 6; ignoring cancellation would take the
        // whole block, many slices).
        let slice = Array(input.prefix(256 << 10))
        let sliceStart = clock.now
        _ = try slice.withUnsafeBytes { try BlockEncoder(preset: 6, maxChunkSize: slice.count).encode($0) }
        let oneSlice = clock.now - sliceStart
        #expect(latency < oneSlice * 4 + .milliseconds(500), "cancellation took \(latency); one slice takes \(oneSlice)")
        // The encoder still works after a cancelled block.
        let small = TestData.mild(1000, seed: 19)
        #expect(try decode(small.withUnsafeBytes { try encoder.encode($0) }) == small)
    }

    @Test(.enabled(if: ChildProcess.lookUp("xz") != nil, "xz is not installed"))
    func assembledStreamIsValidXZ() throws {
        let parts = [
            TestData.mild(200_000, seed: 20), TestData.random(70_000, seed: 21), [], [7], TestData.mild(65_536, seed: 22)
        ]
        let encoder = try BlockEncoder(preset: 6, maxChunkSize: 200_000)
        let blocks = try parts.map { part in try part.withUnsafeBytes { try encoder.encode($0) } }
        #expect(blocks.map(\.isStored) == [false, true, true, true, false])
        let file = try assembleStream(blocks)

        let directory = try TemporaryDirectory(prefix: "XZTests")
        let path = directory.path("assembled.xz")
        #expect(FileManager.default.createFile(atPath: path, contents: Data(file)))

        let test = try ChildProcess.run("xz", ["-t", path])
        #expect(test.status == 0, "xz -t: \(test.stderr)")
        let decoded = try ChildProcess.run("xz", ["-dc", path])
        #expect(decoded.status == 0)
        #expect(decoded.stdout == parts.flatMap { $0 })
        let list = try ChildProcess.run("xz", ["-lvv", path])
        #expect(list.status == 0)
        #expect(list.stdoutString.contains("Sizes in headers:  Yes"))
        #expect(list.stdoutString.contains("CRC64"))
        #expect(list.stdoutString.contains("Blocks:            5"))
    }
}

/// The x86 branch filter in a block's chain (issue #12: executables compress better through it).
@Suite @MainActor struct BlockEncoderBranchFilterTests {
    private func decode(_ block: EncodedBlock) throws -> [UInt8] {
        try block.bytes.withUnsafeBytes { try BlockDecoder().decode(block: $0, check: .crc64) }
    }

    private func header(_ block: EncodedBlock) throws -> BlockHeaderInfo {
        try block.bytes.withUnsafeBytes { try BlockHeaderInfo.parse($0, check: .crc64) }
    }

    @Test func machineCodeIsSmallerThroughTheFilterAndRoundTrips() throws {
        let code = MachineCode.x86(400_000, seed: 61)
        let encoder = try BlockEncoder(preset: 6, maxChunkSize: code.count)
        let plain = try code.withUnsafeBytes { try encoder.encode($0) }
        let filtered = try code.withUnsafeBytes { try encoder.encode($0, branch: .x86) }
        #expect(try header(plain).branchFilter == nil)
        #expect(try header(filtered).branchFilter == .x86)
        #expect(filtered.branch == .x86 && plain.branch == nil, "the block says what its header says")
        #expect(try decode(filtered) == code)
        #expect(
            filtered.bytes.count * 100 < plain.bytes.count * 95,
            "with the filter \(filtered.bytes.count) bytes, without \(plain.bytes.count)")
    }

    @Test func theFilterIsForOneBlockOnly() throws {
        let code = MachineCode.x86(100_000, seed: 62)
        let encoder = try BlockEncoder(preset: 1, maxChunkSize: code.count)
        let first = try code.withUnsafeBytes { try encoder.encode($0) }
        _ = try code.withUnsafeBytes { try encoder.encode($0, branch: .x86) }
        let after = try code.withUnsafeBytes { try encoder.encode($0) }
        #expect(after.bytes == first.bytes)
        #expect(try header(after).branchFilter == nil)
    }

    @Test func incompressibleInputFallsBackToAStoredBlockWithoutTheFilter() throws {
        let noise = TestData.random(100_000, seed: 63)
        let encoder = try BlockEncoder(preset: 6, maxChunkSize: noise.count)
        let block = try noise.withUnsafeBytes { try encoder.encode($0, branch: .x86) }
        #expect(block.isStored)
        #expect(try header(block).branchFilter == nil && block.branch == nil)
        #expect(try decode(block) == noise)
    }

    @Test(.enabled(if: ChildProcess.lookUp("xz") != nil, "xz is not installed"))
    func stockXZDecodesFilteredBlocksAndNamesTheFilter() throws {
        let parts = [MachineCode.x86(300_000, seed: 64), TestData.mild(100_000, seed: 65)]
        let encoder = try BlockEncoder(preset: 6, maxChunkSize: 300_000)
        let blocks = [
            try parts[0].withUnsafeBytes { try encoder.encode($0, branch: .x86) },
            try parts[1].withUnsafeBytes { try encoder.encode($0) }
        ]
        let directory = try TemporaryDirectory(prefix: "XZTests")
        let path = directory.path("filtered.xz")
        #expect(FileManager.default.createFile(atPath: path, contents: Data(try assembleStream(blocks))))
        let decoded = try ChildProcess.run("xz", ["-dc", path])
        #expect(decoded.status == 0, "xz -dc: \(decoded.stderr)")
        #expect(decoded.stdout == parts.flatMap { $0 })
        let list = try ChildProcess.run("xz", ["-lvv", path])
        let filterLines = list.stdoutString.split(separator: "\n").filter { $0.contains("--lzma2") }
        #expect(filterLines.count == 2, "\(list.stdoutString)")
        #expect(filterLines.first?.contains("--x86") == true)
        #expect(filterLines.last?.contains("--x86") == false)
    }
}
