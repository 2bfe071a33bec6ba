import CLZMA

/// Sequential decoder for any .xz file: one or several concatenated streams with stream padding.
/// Use it for input that cannot seek, and for files whose xz Index cannot be read. Not `Sendable`: one decoder
/// belongs to one reading loop.
///
/// liblzma's `LZMA_CONCATENATED` mode would do the concatenation, but it cannot tell anyone where
/// one stream ended: bytes after the last stream that are not a stream header then come out as
/// "input ends early" (fewer than a header's twelve) or "corrupt data" (more), both of which send
/// a reader looking inside the archive rather than at what was appended to it. So each stream is
/// decoded by a single-stream `lzma_stream_decoder`, and this type walks the padding between
/// streams itself, which lets it report trailing garbage as such, at its offset.
public final class StreamDecoder {
    /// Output slice size: bounds the memory per decoder and the size of each delivered slice.
    static let sliceSize = 256 * 1024
    /// The magic bytes a stream header starts with.
    package static let headerMagic: [UInt8] = [0xFD, 0x37, 0x7A, 0x58, 0x5A, 0x00]

    private enum State {
        case idle
        /// Inside a stream, liblzma decoding it.
        case inStream
        /// After a stream's footer: zero padding, another stream, or the end.
        case betweenStreams
        case finished
        case failed
    }

    /// The most memory liblzma may use; a stream needing more is refused with `.memoryLimit`.
    public let memoryLimit: UInt64
    /// Threads that decode a stream's blocks in parallel (liblzma's multi-threaded decoder).
    public let threads: Int
    /// The most threads liblzma's decoder takes (`LZMA_THREADS_MAX`).
    public static let maxThreads = 16_384
    private let stream = LZMAStream()
    private let slice: UnsafeMutableRawBufferPointer
    private var state = State.idle
    /// Streams decoded to their footer.
    private var streamsEnded = 0
    /// Input bytes and output bytes of the finished streams and the padding after them: liblzma's
    /// own counters restart with each stream.
    private var inputBefore: UInt64 = 0
    private var outputBefore: UInt64 = 0
    /// Zero bytes since the last stream ended.
    private var padding: UInt64 = 0
    /// Where the current stream starts in the input, and its first bytes (up to the magic's length;
    /// for the first stream, up to ``ForeignFormat/headSize``, to name a file that is not xz).
    private var streamStart: UInt64 = 0
    private var streamHead: [UInt8] = []
    /// The input does not start like xz; the error waits for enough of it to say what it is.
    private var notXZPending = false
    /// Where the current stream's blocks end in its output, as far as their headers say.
    private var boundaries = BlockBoundaries()

    /// Creates a decoder limited to `memoryLimit` bytes of liblzma memory.
    ///
    /// With `threads` above 1, a stream whose Block Headers give their sizes (every multi-block
    /// writer puts them there: `xz -T`, pixz, this package) has up to that many blocks decoded at
    /// once by liblzma's own threads, and the output still comes in order. `memoryLimit` then
    /// bounds all of them together: liblzma uses fewer threads rather than more memory, and refuses
    /// only a stream that one thread could not decode within it. A stream without sizes in its
    /// Block Headers is decoded on one thread. `threads` is held to liblzma's limit of 16,384:
    /// past it liblzma refused the options at the first bytes, and a sound archive was reported
    /// as damaged.
    public init(memoryLimit: UInt64 = 1 << 30, threads: Int = 1) {
        self.memoryLimit = memoryLimit
        self.threads = min(max(1, threads), Self.maxThreads)
        slice = .allocate(byteCount: Self.sliceSize, alignment: 16)
    }

    deinit {
        slice.deallocate()
    }

    /// Compressed bytes consumed so far.
    /// Whether a stream read so far carries no integrity check (check type None): its blocks'
    /// bytes come out as they decode, and nothing says whether they are the bytes packed.
    public var sawUncheckedStream: Bool { uncheckedBefore || boundaries.isUnchecked }
    private var uncheckedBefore = false

    public var totalIn: UInt64 { inputBefore + (state == .inStream ? stream.pointer.pointee.total_in : 0) }
    /// Decompressed bytes produced so far.
    public var totalOut: UInt64 { outputBefore + (state == .inStream ? stream.pointer.pointee.total_out : 0) }

    /// Decompressed bytes known to have passed their block's integrity check, counted from the
    /// start of the output; what was delivered beyond it may yet belong to a block whose check
    /// fails. Up to date when `output` is called with a slice, and it counts that slice's bytes
    /// only as far as they are verified.
    ///
    /// A block counts as verified once a byte of the block after it has come out, or its stream
    /// has ended; the blocks' ends are read from their headers as the input goes by (see
    /// `BlockBoundaries`), so in a stream whose headers carry no sizes (`xz` without `-T`), nothing is
    /// verified before the end of the stream.
    public private(set) var verifiedOutput: UInt64 = 0

    /// Feeds compressed bytes and delivers the decompressed slices they complete.
    ///
    /// - Throws: `XZError` naming the compressed offset reached: `.format` for input that is not
    ///   .xz (or, after a stream, for bytes that are neither padding nor another stream), `.data`
    ///   for corruption, `.memoryLimit`; `.program` after a previous failure or after
    ///   ``finish(output:)``; whatever `output` throws. After any error the decoder is done.
    public func feed(_ input: UnsafeRawBufferPointer, output: (UnsafeRawBufferPointer) throws -> Void) throws {
        try start()
        do {
            try consume(input, output: output)
        } catch {
            // Whatever escaped left liblzma's view of the input out of step with the caller's.
            state = .failed
            throw error
        }
    }

    /// Signals the end of input and delivers what remains.
    ///
    /// - Throws: `XZError` `.truncated` when the input ended inside a stream (or was empty),
    ///   `.data` when the padding after the last stream is not a multiple of four bytes;
    ///   otherwise as ``feed(_:output:)``.
    public func finish(output: (UnsafeRawBufferPointer) throws -> Void) throws {
        try start()
        do {
            if notXZPending { throw notXZ() }
            if state == .inStream {
                stream.setInput(UnsafeRawBufferPointer(start: nil, count: 0))
                guard try run(LZMA_FINISH, output: output) else {
                    throw XZError(code: .program, message: "stream decoder did not finish", offset: totalIn)
                }
                endStream()
            }
            guard padding % 4 == 0 else { throw paddingError() }
            state = .finished
        } catch {
            state = .failed
            throw error
        }
    }

    /// Decodes `input`: the rest of the current stream, the padding after it, the next streams.
    private func consume(_ input: UnsafeRawBufferPointer, output: (UnsafeRawBufferPointer) throws -> Void) throws {
        var rest = input
        while !rest.isEmpty {
            if state == .betweenStreams {
                let zeros = rest.prefix { $0 == 0 }.count
                padding += UInt64(zeros)
                inputBefore += UInt64(zeros)
                rest = UnsafeRawBufferPointer(rebasing: rest[zeros...])
                if rest.isEmpty { return }
                guard padding % 4 == 0 else { throw paddingError() }
                try beginStream()
            }
            // The first stream's head is kept long enough to say what a file that is not xz is
            // (a tar's magic is 257 bytes in): once its first bytes rule xz out, the rest of that
            // head is gathered, however small the pieces it comes in, before the error is thrown.
            let first = streamsEnded == 0 && streamStart == 0
            let keep = first ? ForeignFormat.headSize : Self.headerMagic.count
            if streamHead.count < keep {
                streamHead += rest.prefix(keep - streamHead.count)
            }
            if first && !Self.headerMagic.starts(with: streamHead.prefix(Self.headerMagic.count)) {
                if streamHead.count >= keep { throw notXZ() }
                notXZPending = true
                return
            }
            boundaries.walk(rest)
            stream.setInput(rest)
            let ended = try run(LZMA_RUN, output: output)
            rest = UnsafeRawBufferPointer(rebasing: rest[(rest.count - stream.pointer.pointee.avail_in)...])
            if ended { endStream() }
        }
    }

    private func start() throws {
        switch state {
        case .inStream, .betweenStreams:
            return
        case .finished:
            throw XZError(code: .program, message: "stream decoder used after finish", offset: totalIn)
        case .failed:
            throw XZError(code: .program, message: "stream decoder used after an earlier error", offset: totalIn)
        case .idle:
            try beginStream()
        }
    }

    /// `LZMA_TELL_UNSUPPORTED_CHECK` (a C macro Swift does not import): without it liblzma
    /// decodes a stream whose check type it does not know (the reserved IDs) without verifying
    /// anything, and `verify` said OK to data nothing had checked, where `xz -t` warns and the
    /// random-access reader refused the same file.
    static let tellUnsupportedCheck: UInt32 = 0x02

    /// Starts liblzma on a stream beginning at the current input offset.
    private func beginStream() throws {
        let ret: lzma_ret
        if threads > 1 {
            var options = lzma_mt()
            options.threads = UInt32(clamping: threads)
            // No timeout: lzma_code returns when it has output or needs input, never empty-handed.
            options.timeout = 0
            options.memlimit_threading = memoryLimit
            options.memlimit_stop = memoryLimit
            options.flags = Self.tellUnsupportedCheck
            ret = lzma_stream_decoder_mt(stream.pointer, &options)
        } else {
            ret = lzma_stream_decoder(stream.pointer, memoryLimit, Self.tellUnsupportedCheck)
        }
        guard ret == LZMA_OK else {
            state = .failed
            throw XZError(ret, "starting stream decoder")
        }
        streamStart = inputBefore
        streamHead = []
        padding = 0
        uncheckedBefore = uncheckedBefore || boundaries.isUnchecked
        boundaries = BlockBoundaries()
        state = .inStream
    }

    /// Moves a finished stream's counts into the running totals.
    private func endStream() {
        inputBefore += stream.pointer.pointee.total_in
        outputBefore += stream.pointer.pointee.total_out
        verifiedOutput = outputBefore
        streamsEnded += 1
        padding = 0
        state = .betweenStreams
    }

    private func notXZ() -> XZError {
        XZError(code: .format, message: ForeignFormat.notXZMessage(streamHead), offset: streamStart)
    }

    private func paddingError() -> XZError {
        XZError(code: .data, message: "stream padding is not a multiple of four bytes", offset: totalIn)
    }

    /// Decodes the input set on the stream. Returns whether the stream ended; `false` when all
    /// the input is used (`LZMA_RUN`).
    private func run(_ action: lzma_action, output: (UnsafeRawBufferPointer) throws -> Void) throws -> Bool {
        let strm = stream.pointer
        while true {
            stream.setOutput(slice)
            let ret = lzma_code(strm, action)
            let produced = slice.count - strm.pointee.avail_out
            if ret == LZMA_STREAM_END {
                // The index and the footer are read and matched with the blocks: all of it holds.
                verifiedOutput = outputBefore + strm.pointee.total_out
            } else if let end = boundaries.verified(
                byOutput: strm.pointee.total_out, input: threads == 1 ? strm.pointee.total_in : nil, failed: ret != LZMA_OK)
            {
                verifiedOutput = outputBefore + end
            }
            if produced > 0 {
                try output(UnsafeRawBufferPointer(rebasing: slice[..<produced]))
            }
            switch ret {
            case LZMA_OK:
                if action == LZMA_RUN && strm.pointee.avail_in == 0 && strm.pointee.avail_out > 0 {
                    return false
                }
            case LZMA_STREAM_END:
                return true
            default:
                throw error(for: ret)
            }
        }
    }

    private func error(for ret: lzma_ret) -> XZError {
        // The input ended before a whole stream header, or the header is not one: either way,
        // if its first bytes are not the magic, no stream starts there.
        let notAStream =
            ret == LZMA_FORMAT_ERROR || (ret == LZMA_BUF_ERROR && !Self.headerMagic.starts(with: streamHead.prefix(Self.headerMagic.count)))
        if notAStream && streamsEnded > 0 {
            return XZError(
                code: .format, message: "data after the end of the xz stream is neither padding nor another stream",
                offset: streamStart)
        }
        if notAStream {
            return notXZ()
        }
        switch ret {
        case LZMA_DATA_ERROR:
            // The block that failed, when its header said where it starts: the decoder's own
            // position is how far it has read, blocks ahead of it with several threads.
            if let block = boundaries.firstUnverifiedBlock(output: stream.pointer.pointee.total_out) {
                return XZError(
                    code: .data, message: "corrupt xz data in the block that starts here (bad check, CRC or compressed data)",
                    offset: streamStart + block)
            }
            return XZError(code: .data, message: "corrupt xz data (bad check, CRC or compressed data)", offset: totalIn)
        case LZMA_MEMLIMIT_ERROR:
            return XZError(code: .memoryLimit, message: "stream needs more than the memory limit of \(memoryLimit) bytes", offset: totalIn)
        case LZMA_BUF_ERROR:
            return XZError(code: .truncated, message: "input ends before the end of the xz stream", offset: totalIn)
        case LZMA_OPTIONS_ERROR:
            return XZError(code: .options, message: "stream uses unsupported options or filters", offset: totalIn)
        case LZMA_UNSUPPORTED_CHECK:
            return XZError(
                code: .unsupportedCheck,
                message: "the stream header names integrity check type \(lzma_get_check(stream.pointer).rawValue), which is not one xz "
                    + "defines (none, CRC32, CRC64, SHA-256): its data cannot be verified",
                offset: streamStart + 7)
        default:
            return XZError(ret, "decoding xz stream", offset: totalIn)
        }
    }
}
