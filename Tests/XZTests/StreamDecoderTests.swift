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
        #expect(offset > 12 && offset <= UInt64(file.count))
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
