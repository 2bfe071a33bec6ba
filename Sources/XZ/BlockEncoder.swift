import CLZMA

/// Compresses chunks into independent xz Blocks whose headers carry both sizes.
///
/// Make one per worker thread: it owns an `lzma_stream` that it reuses across blocks so liblzma
/// does not reallocate its match finder for every chunk. It is deliberately not `Sendable`.
public final class BlockEncoder {
    /// LZMA2 stores uncompressed data in chunks of at most 64 KiB, each with a 3-byte header.
    static let storedChunkSize = 1 << 16

    /// The compression preset, 0...9.
    public let preset: Int
    /// The match length at which the encoder's match finder stops searching.
    public let niceLength: Int
    /// The LZMA2 dictionary the encoder uses, in bytes.
    public let dictionarySize: Int
    /// The nice lengths liblzma accepts.
    public static let niceLengths = 2...273
    private let stream = LZMAStream()
    private let options = BlockOptions()
    private let lzmaOptions: UnsafeMutablePointer<lzma_options_lzma>

    /// Creates an encoder.
    ///
    /// The LZMA2 dictionary is `min(preset's dictionary, dictionarySize, max(4096, maxChunkSize))`:
    /// a dictionary larger than the chunk cannot find anything more, but costs memory and setup
    /// time per block. Blocks always use a CRC64 check.
    ///
    /// - Parameters:
    ///   - preset: 0...9, as `xz -0` ... `xz -9`.
    ///   - extreme: the `-e` variant of the preset.
    ///   - maxChunkSize: the largest input this encoder will be given, in bytes.
    ///   - niceLength: the match length at which the match finder stops looking for a longer one
    ///     (`xz --lzma2=nice=N`), 2...273; `nil` keeps the preset's (64 at preset 6). Shorter is
    ///     faster and a little larger: the search, not the range coder, is where preset 6 spends
    ///     its time.
    ///   - dictionarySize: at most this many bytes of dictionary (`xz --lzma2=dict=N`), at least
    ///     4096; `nil` keeps the preset's. The match finder's memory is about 7.5 times it at
    ///     presets 5 and 6, with a step at each power of two.
    /// - Throws: `XZError` `.options` for a preset outside 0...9, a negative `maxChunkSize`, a
    ///   `niceLength` outside 2...273 or a `dictionarySize` under 4096.
    public init(preset: Int = 6, extreme: Bool = false, maxChunkSize: Int, niceLength: Int? = nil, dictionarySize: Int? = nil) throws {
        guard (0...9).contains(preset) else {
            throw XZError(code: .options, message: "compression preset \(preset) is outside 0...9")
        }
        guard maxChunkSize >= 0 else {
            throw XZError(code: .options, message: "maximum chunk size \(maxChunkSize) is negative")
        }
        if let niceLength, !Self.niceLengths.contains(niceLength) {
            throw XZError(code: .options, message: "nice length \(niceLength) is outside \(Self.niceLengths)")
        }
        if let dictionarySize, dictionarySize < Int(amk_lzma_dict_size_min) {
            throw XZError(code: .options, message: "dictionary size \(dictionarySize) is under \(amk_lzma_dict_size_min) bytes")
        }
        var lzma = lzma_options_lzma()
        let flags = UInt32(preset) | (extreme ? amk_lzma_preset_extreme : 0)
        guard lzma_lzma_preset(&lzma, flags) == 0 else {
            throw XZError(code: .options, message: "liblzma rejected preset \(preset)\(extreme ? " extreme" : "")")
        }
        let wanted = UInt32(clamping: max(Int(amk_lzma_dict_size_min), maxChunkSize))
        lzma.dict_size = min(lzma.dict_size, wanted, UInt32(clamping: dictionarySize ?? Int(UInt32.max)))
        if let niceLength { lzma.nice_len = UInt32(niceLength) }
        self.niceLength = Int(lzma.nice_len)
        self.dictionarySize = Int(lzma.dict_size)
        self.preset = preset
        lzmaOptions = .allocate(capacity: 1)
        lzmaOptions.initialize(to: lzma)
        setFilters(branch: nil)
    }

    /// The chain the next block is encoded with: `branch`, if any, then LZMA2.
    private func setFilters(branch: BranchFilter?) {
        var slot = 0
        if let branch {
            options.filters[slot] = lzma_filter(id: branch.id, options: nil)
            slot += 1
        }
        options.filters[slot] = lzma_filter(id: amk_lzma_filter_lzma2, options: UnsafeMutableRawPointer(lzmaOptions))
        options.filters[slot + 1] = lzma_filter(id: amk_lzma_vli_unknown, options: nil)
    }

    /// The memory one encoder made with these arguments holds (liblzma's estimate: the match
    /// finder's tables and the dictionary, about 94 MiB at preset 6 with its 8 MiB dictionary, 74 MiB with 6 MiB), which a pack's memory budget
    /// counts for each worker.
    ///
    /// - Throws: `XZError` `.options` for arguments ``init(preset:extreme:maxChunkSize:niceLength:dictionarySize:)`` refuses.
    public static func memoryUsage(
        preset: Int = 6, extreme: Bool = false, maxChunkSize: Int, niceLength: Int? = nil, dictionarySize: Int? = nil
    ) throws -> UInt64 {
        let encoder = try BlockEncoder(
            preset: preset, extreme: extreme, maxChunkSize: maxChunkSize, niceLength: niceLength, dictionarySize: dictionarySize)
        let usage = lzma_raw_encoder_memusage(encoder.options.filters)
        guard usage != UInt64.max else {
            throw XZError(code: .options, message: "liblzma cannot size an encoder for preset \(preset)")
        }
        return usage
    }

    deinit {
        lzmaOptions.deinitialize(count: 1)
        lzmaOptions.deallocate()
    }

    /// Size of the Compressed Data field when `count` bytes are stored as uncompressed LZMA2
    /// chunks: a 3-byte header per 64 KiB chunk and the end-of-data byte.
    static func storedDataSize(_ count: Int) -> Int {
        let chunks = count / storedChunkSize + (count % storedChunkSize == 0 ? 0 : 1)
        return count + 3 * chunks + 1
    }

    /// Compresses `input` into one block.
    ///
    /// The input is fed to `lzma_block_encoder` in slices of `sliceSize` bytes, and `isCancelled()`
    /// is asked between slices, so a cancelled pack gives its thread back within one slice's work.
    /// The output buffer leaves room for the Block Header in front; once the data is finished, the
    /// header with both sizes is encoded right before it. When the compressed data would not be
    /// smaller than the stored form, the block is stored instead (see ``encodeStored(_:)``); this
    /// is detected as soon as the output outgrows that size, so incompressible data costs at most
    /// one attempt.
    ///
    /// `branch` puts a ``BranchFilter`` before LZMA2 in this block's filter chain (machine code
    /// compresses better through it); a block that falls back to stored has none.
    ///
    /// - Throws: `CancellationError` when `isCancelled()` returns true; `XZError` when liblzma
    ///   fails or `sliceSize` is not positive.
    public func encode(
        _ input: UnsafeRawBufferPointer,
        branch: BranchFilter? = nil,
        sliceSize: Int = 256 * 1024,
        isCancelled: () -> Bool = { false }
    ) throws -> EncodedBlock {
        guard sliceSize > 0 else {
            throw XZError(code: .options, message: "slice size \(sliceSize) must be positive")
        }
        if isCancelled() { throw CancellationError() }
        // Every block sets its own chain; a stored block ignores it (liblzma encodes those with
        // LZMA2 alone), so nothing needs resetting afterwards.
        setFilters(branch: branch)
        let count = input.count
        let storedData = Self.storedDataSize(count)
        let block = options.block

        // Reserve the header as it will be with the largest compressed size we would keep; the
        // final header is never longer, and is moved down over the gap if it is shorter.
        options.reset(check: .crc64)
        block.pointee.compressed_size = UInt64(storedData)
        block.pointee.uncompressed_size = UInt64(count)
        var ret = lzma_block_header_size(block)
        guard ret == LZMA_OK else { throw XZError(ret, "sizing block header") }
        let reserved = Int(block.pointee.header_size)
        let checkSize = XZCheck.crc64.size
        let capacity = reserved + storedData + 3 + checkSize

        options.reset(check: .crc64)
        ret = lzma_block_encoder(stream.pointer, block)
        guard ret == LZMA_OK else { throw XZError(ret, "starting block encoder") }

        var fellBack = false
        let bytes = try [UInt8](unsafeUninitializedCapacity: capacity) { buffer, initialized in
            initialized = 0
            let out = UnsafeMutableRawBufferPointer(buffer)
            stream.setOutput(UnsafeMutableRawBufferPointer(rebasing: out[reserved...]))
            let strm = stream.pointer

            var position = 0
            while position < count {
                if position > 0, isCancelled() { throw CancellationError() }
                let length = min(sliceSize, count - position)
                stream.setInput(UnsafeRawBufferPointer(rebasing: input[position..<(position + length)]))
                while strm.pointee.avail_in > 0 {
                    let ret = lzma_code(strm, LZMA_RUN)
                    guard ret == LZMA_OK else { throw XZError(ret, "compressing block") }
                    if strm.pointee.avail_out == 0 {
                        fellBack = true
                        return
                    }
                }
                position += length
            }
            if isCancelled() { throw CancellationError() }
            while true {
                let ret = lzma_code(strm, LZMA_FINISH)
                if ret == LZMA_STREAM_END { break }
                guard ret == LZMA_OK else { throw XZError(ret, "finishing block") }
                if strm.pointee.avail_out == 0 {
                    fellBack = true
                    return
                }
            }
            guard block.pointee.compressed_size < UInt64(storedData) else {
                fellBack = true
                return
            }

            let written = capacity - reserved - strm.pointee.avail_out
            let ret = lzma_block_header_size(block)
            guard ret == LZMA_OK else { throw XZError(ret, "sizing block header") }
            let headerSize = Int(block.pointee.header_size)
            if headerSize < reserved {
                out.baseAddress!.advanced(by: headerSize)
                    .copyMemory(from: out.baseAddress!.advanced(by: reserved), byteCount: written)
            }
            let header = lzma_block_header_encode(block, buffer.baseAddress!)
            guard header == LZMA_OK else { throw XZError(header, "encoding block header") }
            initialized = headerSize + written
        }
        if fellBack { return try encodeStored(input) }

        let unpadded = lzma_block_unpadded_size(block)
        guard unpadded != 0 else {
            throw XZError(code: .program, message: "liblzma could not compute the unpadded size of a block it encoded")
        }
        return EncodedBlock(bytes: bytes, unpaddedSize: unpadded, uncompressedSize: UInt64(count), isStored: false, branch: branch)
    }

    /// Encodes `input` as a stored block at memory speed: uncompressed LZMA2 chunks
    /// (`lzma_block_uncomp_encode`), a CRC64 check and both sizes in the header.
    ///
    /// - Throws: `XZError` when liblzma fails (for example, an input too large for the format).
    public func encodeStored(_ input: UnsafeRawBufferPointer) throws -> EncodedBlock {
        let count = input.count
        let capacity = lzma_block_buffer_bound(count)
        guard capacity > 0 else {
            throw XZError(code: .options, message: "input of \(count) bytes is too large for one block")
        }
        options.reset(check: .crc64)
        let block = options.block
        var placeholder: UInt8 = 0
        let bytes = try withUnsafeMutablePointer(to: &placeholder) { empty in
            // liblzma copies from `in` even for zero bytes; never hand it a null pointer.
            let inputBase = input.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? UnsafePointer(empty)
            return try [UInt8](unsafeUninitializedCapacity: capacity) { buffer, initialized in
                var position = 0
                let ret = lzma_block_uncomp_encode(block, inputBase, count, buffer.baseAddress!, &position, capacity)
                guard ret == LZMA_OK else { throw XZError(ret, "encoding stored block") }
                initialized = position
            }
        }
        let unpadded = lzma_block_unpadded_size(block)
        guard unpadded != 0 else {
            throw XZError(code: .program, message: "liblzma could not compute the unpadded size of a stored block")
        }
        return EncodedBlock(bytes: bytes, unpaddedSize: unpadded, uncompressedSize: UInt64(count), isStored: true)
    }
}
