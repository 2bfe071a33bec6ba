import CLZMA

/// Decodes single xz Blocks, for random access and parallel extraction.
///
/// Make one per thread: it owns an `lzma_stream` and an output buffer that it reuses across
/// blocks. It is deliberately not `Sendable`.
public final class BlockDecoder {
    /// Output slice size: bounds the work between cancellation checks and the memory per decoder.
    static let sliceSize = 256 * 1024

    /// The most memory a block's filter chain may need; blocks needing more are refused.
    public let memoryLimit: UInt64
    private let stream = LZMAStream()
    private let options = BlockOptions()
    private let slice: UnsafeMutableRawBufferPointer

    /// Creates a decoder that refuses blocks whose filters (mostly the LZMA2 dictionary) would need
    /// more than `memoryLimit` bytes, so a hostile header cannot make it allocate gigabytes.
    public init(memoryLimit: UInt64 = 1 << 30) {
        self.memoryLimit = memoryLimit
        slice = .allocate(byteCount: Self.sliceSize, alignment: 16)
    }

    deinit {
        slice.deallocate()
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
        try options.decodeHeader(block, check: check, fileOffset: fileOffset)
        defer { options.releaseDecodedFilters() }
        let info = options.block.pointee
        let headerSize = Int(info.header_size)
        let declaredCompressed = info.compressed_size == amk_lzma_vli_unknown ? nil : info.compressed_size
        let declaredUncompressed = info.uncompressed_size == amk_lzma_vli_unknown ? nil : info.uncompressed_size

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
        if stopAfter == nil, let compressed = declaredCompressed {
            let total = UInt64(headerSize) + ((compressed + 3) & ~3) + UInt64(check.size)
            guard UInt64(block.count) >= total else {
                throw XZError(
                    code: .truncated,
                    message: "block of \(total) bytes is cut short: only \(block.count) bytes available",
                    offset: fileOffset)
            }
        }

        let ret = lzma_block_decoder(stream.pointer, options.block)
        guard ret == LZMA_OK else { throw XZError(ret, "starting block decoder", offset: fileOffset) }
        if stopAfter == 0 { return 0 }

        let strm = stream.pointer
        stream.setInput(UnsafeRawBufferPointer(rebasing: block[headerSize...]))
        var delivered: UInt64 = 0
        while true {
            if delivered > 0, isCancelled() { throw CancellationError() }
            stream.setOutput(slice)
            let availableBefore = strm.pointee.avail_in
            let ret = lzma_code(strm, LZMA_RUN)
            let produced = slice.count - strm.pointee.avail_out
            guard ret == LZMA_OK || ret == LZMA_STREAM_END else {
                throw decodingError(ret, consumed: strm.pointee.total_in, headerSize: headerSize,
                                    compressed: declaredCompressed, check: check, fileOffset: fileOffset)
            }
            if produced > 0 {
                let chunk = UnsafeRawBufferPointer(rebasing: slice[..<produced])
                if let stopAfter, delivered + UInt64(produced) >= stopAfter {
                    try output(UnsafeRawBufferPointer(rebasing: chunk[..<Int(stopAfter - delivered)]))
                    return stopAfter
                }
                try output(chunk)
                delivered += UInt64(produced)
            }
            if ret == LZMA_STREAM_END { break }
            if produced == 0 && strm.pointee.avail_in == availableBefore {
                throw XZError(
                    code: .truncated,
                    message: "block ends early: input exhausted after \(delivered) decoded bytes",
                    offset: fileOffset + UInt64(headerSize) + strm.pointee.total_in)
            }
        }
        // liblzma checks the sizes against the header itself; this guards against a header that
        // declared none of them being trusted elsewhere with a wrong value.
        if let declaredUncompressed, declaredUncompressed != delivered {
            throw XZError(
                code: .data,
                message: "block header declares \(declaredUncompressed) uncompressed bytes, decoded \(delivered)",
                offset: fileOffset)
        }
        return delivered
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
        result.reserveCapacity(Int(header.uncompressedSize ?? 0))
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
    private func decodingError(
        _ ret: lzma_ret, consumed: UInt64, headerSize: Int, compressed: UInt64?, check: XZCheck, fileOffset: UInt64
    ) -> XZError {
        let dataStart = fileOffset + UInt64(headerSize)
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
