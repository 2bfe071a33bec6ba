import TestSupport
import Testing
import XZ

@Suite(.background) struct StreamDecoderTests {
    private func decode(_ file: [UInt8], pieces: Int = 1 << 30, memoryLimit: UInt64 = 1 << 30, threads: Int = 1) throws -> [UInt8] {
        let decoder = StreamDecoder(memoryLimit: memoryLimit, threads: threads)
        var out: [UInt8] = []
        var position = 0
        while position < file.count {
            let end = min(file.count, position + pieces)
            try file[position..<end].withUnsafeBytes { try decoder.feed($0) { out.append(contentsOf: $0) } }
            position = end
        }
        try decoder.finish { out.append(contentsOf: $0) }
        #expect(decoder.totalIn == UInt64(file.count))
        #expect(decoder.totalOut == UInt64(out.count))
        return out
    }

    private static func ourStream(_ parts: [[UInt8]], maxChunkSize: Int = 1 << 20) throws -> [UInt8] {
        let encoder = try BlockEncoder(preset: 1, maxChunkSize: maxChunkSize)
        return try assembleStream(parts.map { p in try p.withUnsafeBytes { try encoder.encode($0) } })
    }

    /// With one thread and with liblzma's multi-threaded decoder: the same output, the same errors.
    @Test(arguments: [1, 2]) func decodesOurStream(threads: Int) throws {
        let parts = [TestData.mild(300_000, seed: 120), TestData.random(50_000, seed: 121), []]
        let file = try Self.ourStream(parts)
        #expect(try decode(file, threads: threads) == parts.flatMap { $0 })
        #expect(try decode(file, pieces: 997, threads: threads) == parts.flatMap { $0 })
    }

    /// More threads than liblzma takes (16,384) were refused at the first bytes, and a sound
    /// stream was reported as damaged ("unsupported options"): held to the limit, it decodes.
    @Test func moreThreadsThanLiblzmaTakesAreHeldToItsLimit() throws {
        #expect(StreamDecoder(threads: 20_000).threads == StreamDecoder.maxThreads)
        #expect(StreamDecoder(threads: -3).threads == 1)
        let parts = [TestData.mild(100_000, seed: 122)]
        #expect(try decode(try Self.ourStream(parts), threads: 20_000) == parts[0])
    }

    @Test(.enabled(if: ChildProcess.lookUp("xz") != nil, "xz is not installed"))
    func decodesConcatenatedStreamsWithPadding() throws {
        for threads in [1, 2] {
            try decodesConcatenatedStreamsWithPadding(threads: threads)
        }
    }

    private func decodesConcatenatedStreamsWithPadding(threads: Int) throws {
        let a = TestData.mild(100_000, seed: 122)
        let b = TestData.random(20_000, seed: 123)
        let file = try Tool.xz(["-T2", "--block-size=64KiB", "-1"], a) + [0, 0, 0, 0] + Tool.xz(["-6"], b) + [0, 0, 0, 0, 0, 0, 0, 0]
        #expect(try decode(file, threads: threads) == a + b)
        #expect(try decode(file, pieces: 4096, threads: threads) == a + b)
    }

    @Test func garbageIsFormatError() throws {
        let error = #expect(throws: XZError.self) { _ = try decode(Array("this is plainly not an xz file".utf8)) }
        #expect(error?.code == .format)
        #expect(error?.offset != nil)
        #expect(error?.message.isEmpty == false)
    }

    /// With one thread and with liblzma's multi-threaded decoder: the same output, the same errors.
    @Test(arguments: [1, 2]) func truncationIsDetectedAtFinish(threads: Int) throws {
        let file = try Self.ourStream([TestData.mild(100_000, seed: 124)])
        for cut in [1, 12, 40, file.count / 2] {
            let error = #expect(throws: XZError.self) { _ = try decode(Array(file.dropLast(cut)), threads: threads) }
            #expect(error?.code == .truncated, "cut \(cut)")
        }
        let empty = #expect(throws: XZError.self) { _ = try decode([], threads: threads) }
        #expect(empty?.code == .truncated)
    }

    /// With one thread and with liblzma's multi-threaded decoder: the same output, the same errors.
    @Test(arguments: [1, 2]) func corruptionIsDataError(threads: Int) throws {
        let file = try Self.ourStream([TestData.mild(100_000, seed: 125)])
        var damaged = file
        damaged[file.count / 2] ^= 0x20
        let error = #expect(throws: XZError.self) { _ = try decode(damaged, threads: threads) }
        #expect(error?.code == .data)
        let offset = try #require(error?.offset)
        #expect(offset >= 12 && offset <= UInt64(file.count))
    }

    /// Damage inside a block's compressed data, found before the block's bytes are all out, is
    /// reported at the start of that block, which its header placed: with several threads the
    /// decoder has read blocks beyond it, and its own position named none of them.
    @Test(arguments: [1, 2]) func damageInsideABlockNamesTheBlock(threads: Int) throws {
        let parts = (0..<6).map { TestData.mild(400_000, seed: 140 + UInt64($0)) }
        let encoder = try BlockEncoder(preset: 1, maxChunkSize: 1 << 20)
        let blocks = try parts.map { part in try part.withUnsafeBytes { try encoder.encode($0) } }
        let file = try assembleStream(blocks)
        let third = 12 + blocks[0].bytes.count + blocks[1].bytes.count
        var damaged = file
        damaged[third + 200] ^= 0x55
        let error = #expect(throws: XZError.self) { _ = try decode(damaged, threads: threads) }
        #expect(error?.code == .data)
        #expect(error?.offset == UInt64(third), "\(String(describing: error))")
        #expect(error?.message.contains("in the block that starts here") == true)
    }

    /// Bytes come out of a block before its check is read: `verifiedOutput` says how far they
    /// have passed theirs. It stops only at the block ends the headers give, passes a block once a
    /// byte of the next has come out, and holds everything once the stream has ended; a block
    /// whose check fails leaves it at the end of the block before, whatever came out of that one.
    @Test(arguments: [1, 2]) func verifiedOutputFollowsTheBlocksChecks(threads: Int) throws {
        let parts = [TestData.random(70_000, seed: 130), TestData.random(90_000, seed: 131), TestData.mild(50_000, seed: 132)]
        let ends: [UInt64] = [70_000, 160_000, 210_000]
        let file = try Self.ourStream(parts)
        for pieces in [997, 1 << 20] {
            let decoder = StreamDecoder(threads: threads)
            var delivered: UInt64 = 0
            var seen: [UInt64] = []
            let take = { (out: UnsafeRawBufferPointer) in
                delivered += UInt64(out.count)
                let verified = decoder.verifiedOutput
                #expect(verified <= delivered)
                #expect(verified == 0 || ends.contains(verified), "\(verified) is no block's end")
                #expect(verified >= ends.last(where: { $0 < delivered }) ?? 0, "a block the output has passed is not verified")
                seen.append(verified)
            }
            var position = 0
            while position < file.count {
                let end = min(file.count, position + pieces)
                try file[position..<end].withUnsafeBytes { try decoder.feed($0, output: take) }
                position = end
            }
            try decoder.finish(output: take)
            #expect(decoder.verifiedOutput == 210_000)
            #expect(seen == seen.sorted())
            if threads == 1 && pieces < 1000 {
                // One thread, small pieces: the output stops at every block's end on its way.
                #expect(Set(seen) == [0, 70_000, 160_000, 210_000])
            }
        }
        // A byte changed inside the second block's stored bytes decodes without complaint; only
        // the check at the block's end finds it.
        let marker = Array(parts[1][40_000..<40_032])
        let at = try #require(
            (0...(file.count - marker.count)).first { file[$0..<($0 + marker.count)].elementsEqual(marker) }, "the random bytes are stored")
        var damaged = file
        damaged[at] ^= 0x01
        let decoder = StreamDecoder(threads: threads)
        var verifiedAtEachSlice: [UInt64] = []
        let error = #expect(throws: XZError.self) {
            try damaged.withUnsafeBytes { try decoder.feed($0) { _ in verifiedAtEachSlice.append(decoder.verifiedOutput) } }
            try decoder.finish { _ in verifiedAtEachSlice.append(decoder.verifiedOutput) }
        }
        #expect(error?.code == .data)
        #expect(decoder.verifiedOutput == 70_000)
        #expect(verifiedAtEachSlice.allSatisfy { $0 <= 70_000 })
    }

    /// Damage after the last block (here in the xz Index): one thread reads its input in order
    /// and stops at a failed check, so a block whose check it has read has passed, though no
    /// byte after it came out; the blocks before the Index stay verified. liblzma's threads read
    /// ahead of what they check, and the last block is then not known to have passed.
    @Test func aDamagedIndexLeavesTheBlocksBeforeItVerifiedOnOneThread() throws {
        let parts = [TestData.mild(70_000, seed: 150), TestData.mild(90_000, seed: 151)]
        let encoder = try BlockEncoder(preset: 1, maxChunkSize: 1 << 20)
        let blocks = try parts.map { part in try part.withUnsafeBytes { try encoder.encode($0) } }
        var file = try assembleStream(blocks)
        let index = 12 + blocks.reduce(0) { $0 + $1.bytes.count }
        file[index + 2] ^= 0x01
        let decoder = StreamDecoder(threads: 1)
        let error = #expect(throws: XZError.self) {
            try file.withUnsafeBytes { try decoder.feed($0) { _ in } }
            try decoder.finish { _ in }
        }
        #expect(error?.code == .data)
        #expect(decoder.verifiedOutput == 160_000, "both blocks' checks were read and passed")
    }

    /// `xz` without `-T` writes one block whose header gives no sizes: nothing is known to be
    /// verified before the stream ends, and then all of it.
    @Test(.enabled(if: ChildProcess.lookUp("xz") != nil, "xz is not installed"))
    func aBlockWithoutSizesIsVerifiedAtTheStreamsEnd() throws {
        let data = TestData.mild(600_000, seed: 133)
        let file = try Tool.xz(["-0", "-T1", "--check=crc64"], data)
        let decoder = StreamDecoder(threads: 2)
        var slices = 0
        try file.withUnsafeBytes { raw in
            try decoder.feed(raw) { _ in
                slices += 1
                #expect(decoder.verifiedOutput == 0 || decoder.verifiedOutput == 600_000)
            }
        }
        try decoder.finish { _ in #expect(decoder.verifiedOutput == 600_000) }
        #expect(slices > 1)
        #expect(decoder.verifiedOutput == 600_000)
    }

    /// A stream whose header names a reserved check type (5: eight bytes, like CRC64, but no
    /// algorithm) was decoded with nothing verified, and `verify` said OK where `xz -t` warns
    /// and the random-access reader refused it. It is refused, naming the type.
    @Test(arguments: [1, 2]) func aReservedCheckTypeIsRefused(threads: Int) throws {
        var file = try Self.ourStream([TestData.mild(10_000, seed: 130)])
        // The stream flags, in the header (bytes 6 and 7, then their CRC32) and in the footer
        // (its CRC32 covers the backward size and the flags).
        file[7] = 5
        let headerCRC = CRC.crc32(Array(file[6..<8]))
        for index in 0..<4 { file[8 + index] = UInt8(truncatingIfNeeded: headerCRC >> (8 * UInt32(index))) }
        let footer = file.count - 12
        file[footer + 9] = 5
        let footerCRC = CRC.crc32(Array(file[(footer + 4)..<(footer + 10)]))
        for index in 0..<4 { file[footer + index] = UInt8(truncatingIfNeeded: footerCRC >> (8 * UInt32(index))) }
        let error = #expect(throws: XZError.self) { _ = try decode(file, threads: threads) }
        #expect(error?.code == .unsupportedCheck, "\(String(describing: error))")
        #expect(error?.message.contains("check type 5") == true, "\(String(describing: error))")
    }

    /// With one thread and with liblzma's multi-threaded decoder: the same output, the same errors.
    @Test(arguments: [1, 2]) func trailingGarbageIsAnError(threads: Int) throws {
        let file = try Self.ourStream([TestData.mild(1000, seed: 126)]) + [1, 2, 3, 4]
        let error = #expect(throws: XZError.self) { _ = try decode(file, threads: threads) }
        #expect(error != nil)
        #expect(error?.offset != nil)
    }

    /// Bytes after the last stream that are neither zero padding nor another stream: the error
    /// says so and points at them, instead of claiming the input ended early (short garbage) or
    /// that the data is corrupt (long garbage), which both sent people looking in the wrong place.
    @Test(arguments: [Array("garbage\n".utf8), [1, 2, 3, 4], Array(repeating: 0x41, count: 100)])
    func trailingGarbageIsNamedAsSuch(garbage: [UInt8]) throws {
        let stream = try Self.ourStream([TestData.mild(1000, seed: 129)])
        for (padding, pieces) in [(0, 1 << 30), (4, 1 << 30), (8, 7)] {
            let file = stream + [UInt8](repeating: 0, count: padding) + garbage
            let error = #expect(throws: XZError.self) { _ = try decode(file, pieces: pieces) }
            #expect(error?.code == .format, "padding \(padding), pieces \(pieces)")
            #expect(
                error?.message == "data after the end of the xz stream is neither padding nor another stream",
                "padding \(padding), pieces \(pieces)")
            #expect(error?.offset == UInt64(stream.count + padding), "padding \(padding), pieces \(pieces)")
        }
    }

    /// With one thread and with liblzma's multi-threaded decoder: the same output, the same errors.
    @Test(arguments: [1, 2]) func zeroPaddingIsAcceptedInFours(threads: Int) throws {
        let data = TestData.mild(1000, seed: 130)
        let stream = try Self.ourStream([data])
        #expect(try decode(stream + [0, 0, 0, 0], threads: threads) == data)
        #expect(try decode(stream + [0, 0, 0, 0, 0, 0, 0, 0], pieces: 3, threads: threads) == data)
        let error = #expect(throws: XZError.self) { _ = try decode(stream + [0, 0, 0], threads: threads) }
        #expect(error?.code == .data)
        #expect(error?.message.contains("padding") == true, "\(error?.message ?? "")")
    }

    /// With one thread and with liblzma's multi-threaded decoder: the same output, the same errors.
    @Test(arguments: [1, 2]) func concatenatedStreamsDecodeInAnyPieces(threads: Int) throws {
        let a = TestData.mild(50_000, seed: 131)
        let b = TestData.random(3000, seed: 132)
        let file = try Self.ourStream([a]) + [0, 0, 0, 0] + Self.ourStream([b]) + Self.ourStream([[]])
        for pieces in [1 << 30, 4096, 13, 1] {
            #expect(try decode(file, pieces: pieces, threads: threads) == a + b, "pieces \(pieces)")
        }
    }

    /// A second stream that breaks off inside its header is a truncation, not garbage.
    @Test func aSecondStreamCutInItsHeaderIsTruncated() throws {
        let stream = try Self.ourStream([TestData.mild(1000, seed: 133)])
        for cut in [1, 6, 11] {
            let error = #expect(throws: XZError.self) { _ = try decode(stream + Array(stream.prefix(cut))) }
            #expect(error?.code == .truncated, "cut \(cut)")
        }
    }

    /// A file shorter than a stream header that does not start like one is not xz: a format
    /// error, as for a longer one, rather than a truncation.
    @Test func aShortFileThatIsNotXZIsAFormatError() throws {
        let error = #expect(throws: XZError.self) { _ = try decode(Array("hello\n".utf8)) }
        #expect(error?.code == .format)
        #expect(error?.offset == 0)
    }

    /// With one thread and with liblzma's multi-threaded decoder: the same output, the same errors.
    @Test(arguments: [1, 2]) func memoryLimitIsApplied(threads: Int) throws {
        let file = try Self.ourStream([TestData.mild(1000, seed: 127)], maxChunkSize: 8 << 20)
        let error = #expect(throws: XZError.self) { _ = try decode(file, memoryLimit: 1 << 20, threads: threads) }
        #expect(error?.code == .memoryLimit)
    }

    @Test func useAfterFinishIsProgramError() throws {
        let file = try Self.ourStream([[1, 2, 3]])
        let decoder = StreamDecoder()
        try file.withUnsafeBytes { try decoder.feed($0) { _ in } }
        try decoder.finish { _ in }
        let error = #expect(throws: XZError.self) { try file.withUnsafeBytes { try decoder.feed($0) { _ in } } }
        #expect(error?.code == .program)
    }

    @Test func outputErrorsPropagateAndEndTheDecoder() throws {
        struct Stop: Error {}
        let file = try Self.ourStream([TestData.mild(10_000, seed: 128)])
        let decoder = StreamDecoder()
        #expect(throws: Stop.self) { try file.withUnsafeBytes { try decoder.feed($0) { _ in throw Stop() } } }
        let error = #expect(throws: XZError.self) { try decoder.finish { _ in } }
        #expect(error?.code == .program)
    }
}
