import CLZMA

/// Decodes single xz Blocks, for random access and parallel extraction.
///
/// Make one per thread: it owns an `lzma_stream` and an output buffer that it reuses across
/// blocks. It is deliberately not `Sendable`.
///
/// A block can be decoded in one call from bytes already in memory
/// (``decode(block:check:fileOffset:stopAfter:isCancelled:output:)``), or in pieces
/// (``begin(header:check:fileOffset:uncompressedSize:)`` then
/// ``decode(_:maxOutput:isCancelled:output:)`` as often as needed). Pieces exist because a
/// block's sizes come from the file and are not to be trusted: a 600 KB archive can hold a block
/// that decodes to 4 GiB, and a reader that needed the whole block, or all of its output, in
/// memory would let such a file exhaust it. In pieces, neither side of a block is ever held whole.
public final class BlockDecoder {
    /// Output slice size: bounds the work between cancellation checks and the memory per decoder.
    static let sliceSize = 256 * 1024

    /// The most memory a block's filter chain may need; blocks needing more are refused.
    public let memoryLimit: UInt64
    private let stream = LZMAStream()
    private let options = BlockOptions()
    private let slice: UnsafeMutableRawBufferPointer

    /// Where the block being decoded stands.
    private struct Progress {
        var headerSize: Int
        var declaredCompressed: UInt64?
        var declaredUncompressed: UInt64?
        /// The size the caller expects (the xz Index's), enforced whatever the header declares.
        var expectedSize: UInt64?
        var check: XZCheck
        var fileOffset: UInt64
        var delivered: UInt64 = 0
        var finished = false
    }

    private var progress: Progress?

    /// Creates a decoder that refuses blocks whose filters (mostly the LZMA2 dictionary) would need
    /// more than `memoryLimit` bytes, so a hostile header cannot make it allocate gigabytes.
    public init(memoryLimit: UInt64 = 1 << 30) {
        self.memoryLimit = memoryLimit
        slice = .allocate(byteCount: Self.sliceSize, alignment: 16)
    }

    deinit {
        options.releaseDecodedFilters()
        slice.deallocate()
    }

    /// Uncompressed bytes delivered so far for the block begun last.
    public var deliveredBytes: UInt64 { progress?.delivered ?? 0 }

    /// Whether the block begun last has ended, its check verified.
    public var isFinished: Bool { progress?.finished ?? false }

    /// Starts decoding a block in pieces.
    ///
    /// - Parameters:
    ///   - header: bytes starting at the Block Header; at least the header (1024 bytes always
    ///     suffice). Bytes past the header are not used: feed them to
    ///     ``decode(_:maxOutput:isCancelled:output:)``.
    ///   - check: the check type of the stream holding the block.
    ///   - fileOffset: where the block starts in the file; used only in error messages.
    ///   - uncompressedSize: the size the block must decode to, when the caller knows it (from
    ///     the xz Index). A header that declares another size is refused at once, and decoding
    ///     fails as soon as the output would pass it, so a header that declares no size cannot
    ///     make the block decode to more.
    /// - Returns: the size of the Block Header: the compressed data starts that far into `header`.
    /// - Throws: `XZError` `.data`, `.truncated` or `.options` for a bad header, `.memoryLimit` when
    ///   the block needs more memory than allowed.
    public func begin(
        header: UnsafeRawBufferPointer, check: XZCheck, fileOffset: UInt64 = 0,
        uncompressedSize: UInt64? = nil
    ) throws -> Int {
        progress = nil
        try options.decodeHeader(header, check: check, fileOffset: fileOffset)
        let info = options.block.pointee
        let headerSize = Int(info.header_size)
        let declaredCompressed = info.compressed_size == amk_lzma_vli_unknown ? nil : info.compressed_size
        let declaredUncompressed = info.uncompressed_size == amk_lzma_vli_unknown ? nil : info.uncompressed_size
        if let uncompressedSize, let declaredUncompressed, uncompressedSize != declaredUncompressed {
            throw XZError(
                code: .data,
                message: "block header declares \(declaredUncompressed) uncompressed bytes, the xz Index \(uncompressedSize)",
                offset: fileOffset)
        }

        let needed = lzma_raw_decoder_memusage(options.filters)
        guard needed != UInt64.max else {
            throw XZError(code: .options, message: "block uses a filter chain liblzma cannot decode", offset: fileOffset)
        }
        guard needed <= memoryLimit else {
            throw XZError(
                code: .memoryLimit,
                message: "block needs \(needed) bytes of memory to decode, the limit is \(memoryLimit)",
                offset: fileOffset)
        }
        let ret = lzma_block_decoder(stream.pointer, options.block)
        guard ret == LZMA_OK else { throw XZError(ret, "starting block decoder", offset: fileOffset) }
        progress = Progress(
            headerSize: headerSize, declaredCompressed: declaredCompressed,
            declaredUncompressed: declaredUncompressed, expectedSize: uncompressedSize,
            check: check, fileOffset: fileOffset)
        return headerSize
    }

    /// Decodes the next piece of the block begun with ``begin(header:check:fileOffset:uncompressedSize:)``.
    ///
    /// Decoding goes on until the block ends, `maxOutput` bytes have been delivered by this call,
    /// or `input` is used up. The bytes of `input` not consumed must be passed again (first) in
    /// the next call; a call that consumes nothing and delivers nothing needs more input.
    ///
    /// - Parameters:
    ///   - input: compressed bytes that follow those consumed so far (the block's data, padding
    ///     and check; bytes past the block's end are not consumed).
    ///   - maxOutput: the most bytes to deliver in this call.
    ///   - isCancelled: asked between output slices.
    ///   - output: receives each decoded slice (at most 256 KiB); the buffer is only valid during
    ///     the call.
    /// - Returns: the number of bytes of `input` consumed, and whether the block has ended (its
    ///   check then verified, its sizes compared with the header's and the caller's).
    /// - Throws: `CancellationError`; `XZError` `.data` for corrupt data, a check mismatch, or
    ///   output that passes the expected size; `.program` when no block was begun; whatever
    ///   `output` throws. After an error, begin the block again.
    public func decode(
        _ input: UnsafeRawBufferPointer, maxOutput: Int = .max, isCancelled: () -> Bool = { false },
        output: (UnsafeRawBufferPointer) throws -> Void
    ) throws -> (consumed: Int, finished: Bool) {
        guard var state = progress else {
            throw XZError(code: .program, message: "block decoder used before begin(header:)")
        }
        if state.finished { return (0, true) }
        // Whatever escapes below leaves the stream in an unknown state.
        progress = nil
        let strm = stream.pointer
        stream.setInput(input)
        var deliveredHere = 0
        while deliveredHere < maxOutput {
            if state.delivered > 0, isCancelled() { throw CancellationError() }
            let room = min(slice.count, maxOutput - deliveredHere)
            stream.setOutput(UnsafeMutableRawBufferPointer(rebasing: slice[..<room]))
            let availableBefore = strm.pointee.avail_in
            let ret = lzma_code(strm, LZMA_RUN)
            let produced = room - strm.pointee.avail_out
            guard ret == LZMA_OK || ret == LZMA_STREAM_END else {
                throw decodingError(ret, consumed: strm.pointee.total_in, state: state)
            }
            if produced > 0 {
                let (total, overflow) = state.delivered.addingReportingOverflow(UInt64(produced))
                if let expected = state.expectedSize, overflow || total > expected {
                    throw XZError(
                        code: .data,
                        message: "block decodes to more than the \(expected) bytes the xz Index gives it",
                        offset: state.fileOffset)
                }
                try output(UnsafeRawBufferPointer(rebasing: slice[..<produced]))
                state.delivered = total
                deliveredHere += produced
            }
            if ret == LZMA_STREAM_END {
                try finish(state)
                state.finished = true
                break
            }
            // No progress: every input byte is used and nothing more can come out of them.
            if produced == 0 && strm.pointee.avail_in == availableBefore { break }
            if strm.pointee.avail_in == 0 && produced < room { break }
        }
        progress = state
        return (input.count - strm.pointee.avail_in, state.finished)
    }

    /// The checks once the block has ended: liblzma compares the sizes with the header's itself;
    /// these guard against a header that declared none of them being trusted elsewhere.
    private func finish(_ state: Progress) throws {
        if let declared = state.declaredUncompressed, declared != state.delivered {
            throw XZError(
                code: .data,
                message: "block header declares \(declared) uncompressed bytes, decoded \(state.delivered)",
                offset: state.fileOffset)
        }
        if let expected = state.expectedSize, expected != state.delivered {
            throw XZError(
                code: .data,
                message: "block decodes to \(state.delivered) bytes, the xz Index gives it \(expected)",
                offset: state.fileOffset)
        }
    }

    /// Decodes one block, delivering the output in slices.
    ///
    /// - Parameters:
    ///   - block: bytes starting at the Block Header. They may extend past the block (callers pass
    ///     the slice given by the xz Index); extra bytes are ignored.
    ///   - check: the check type of the stream holding the block.
    ///   - fileOffset: where the block starts in the file; used only in error messages.
    ///   - stopAfter: stop once this many uncompressed bytes have been delivered. The block check
    ///     is then not verified, because the rest of the data is never read.
    ///   - isCancelled: asked between slices.
    ///   - output: receives each decoded slice; the buffer is only valid during the call.
    /// - Returns: the number of uncompressed bytes delivered.
    /// - Throws: `CancellationError`; `XZError` `.data` (with the offset) for corrupt data, a check
    ///   mismatch or sizes that disagree with the header, `.truncated` when `block` ends early,
    ///   `.memoryLimit` when the block needs more memory than allowed; whatever `output` throws.
    @discardableResult
    public func decode(
        block: UnsafeRawBufferPointer,
        check: XZCheck,
        fileOffset: UInt64 = 0,
        stopAfter: UInt64? = nil,
        isCancelled: () -> Bool = { false },
        output: (UnsafeRawBufferPointer) throws -> Void
    ) throws -> UInt64 {
        if isCancelled() { throw CancellationError() }
        let headerSize = try begin(header: block, check: check, fileOffset: fileOffset)
        defer { options.releaseDecodedFilters() }
        if stopAfter == nil, let compressed = progress?.declaredCompressed {
            // The header's size is at most 2^63 - 1: the sum cannot overflow.
            let total = UInt64(headerSize) + ((compressed + 3) & ~3) + UInt64(check.size)
            guard UInt64(block.count) >= total else {
                throw XZError(
                    code: .truncated,
                    message: "block of \(total) bytes is cut short: only \(block.count) bytes available",
                    offset: fileOffset)
            }
        }
        if stopAfter == 0 { return 0 }

        var input = UnsafeRawBufferPointer(rebasing: block[headerSize...])
        while true {
            let wanted = stopAfter.map { Int(clamping: $0 - deliveredBytes) } ?? .max
            let (consumed, finished) = try decode(input, maxOutput: wanted, isCancelled: isCancelled, output: output)
            input = UnsafeRawBufferPointer(rebasing: input[consumed...])
            if finished { break }
            if let stopAfter, deliveredBytes >= stopAfter { return stopAfter }
            // All the input was there: a piece that ends short of the block means it is cut.
            throw XZError(
                code: .truncated,
                message: "block ends early: input exhausted after \(deliveredBytes) decoded bytes",
                offset: fileOffset + UInt64(headerSize) + stream.pointer.pointee.total_in)
        }
        return deliveredBytes
    }

    /// Decodes one whole block into an array.
    ///
    /// - Throws: `XZError` `.memoryLimit` when the header declares more than `maxOutput` bytes (or,
    ///   when it declares none, as soon as the output passes `maxOutput`); otherwise as
    ///   ``decode(block:check:fileOffset:stopAfter:isCancelled:output:)``.
    public func decode(
        block: UnsafeRawBufferPointer,
        check: XZCheck,
        fileOffset: UInt64 = 0,
        maxOutput: Int = 1 << 30
    ) throws -> [UInt8] {
        let limit = UInt64(max(0, maxOutput))
        let header = try BlockHeaderInfo.parse(block, check: check, fileOffset: fileOffset)
        if let size = header.uncompressedSize, size > limit {
            throw XZError(
                code: .memoryLimit,
                message: "block declares \(size) uncompressed bytes, more than the allowed \(limit)",
                offset: fileOffset)
        }
        var result: [UInt8] = []
        // Bounded by the caller's limit, checked above.
        result.reserveCapacity(Int(min(header.uncompressedSize ?? 0, limit)))
        try decode(block: block, check: check, fileOffset: fileOffset) { chunk in
            guard UInt64(result.count + chunk.count) <= limit else {
                throw XZError(
                    code: .memoryLimit,
                    message: "block decodes to more than the allowed \(limit) bytes",
                    offset: fileOffset)
            }
            result.append(contentsOf: chunk)
        }
        return result
    }

    /// Turns a decoding failure into an error that says where it happened. liblzma reports a bad
    /// check, bad padding and corrupt data all as `LZMA_DATA_ERROR`; how far it had read tells
    /// them apart when the header declares the compressed size.
    private func decodingError(_ ret: lzma_ret, consumed: UInt64, state: Progress) -> XZError {
        let compressed = state.declaredCompressed
        let check = state.check
        let dataStart = state.fileOffset + UInt64(state.headerSize)
        guard ret == LZMA_DATA_ERROR else {
            return XZError(ret, "decoding block", offset: dataStart + consumed)
        }
        if let compressed, consumed > compressed {
            let padded = (compressed + 3) & ~3
            if consumed <= padded {
                return XZError(code: .data, message: "block padding is not zero", offset: dataStart + compressed)
            }
            return XZError(
                code: .data,
                message: "block check mismatch (\(check)): the decoded data is not what was compressed",
                offset: dataStart + padded)
        }
        return XZError(
            code: .data,
            message: "corrupt compressed data, or sizes that disagree with the block header",
            offset: dataStart + consumed)
    }
}
