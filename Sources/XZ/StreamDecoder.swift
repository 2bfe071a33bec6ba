import CLZMA

/// Sequential decoder for any .xz file: one or several concatenated streams with stream padding
/// (`lzma_stream_decoder` with `LZMA_CONCATENATED`). Use it for foreign archives and for input
/// that cannot seek. Not `Sendable`: one decoder belongs to one reading loop.
public final class StreamDecoder {
    /// Output slice size: bounds the memory per decoder and the size of each delivered slice.
    static let sliceSize = 256 * 1024

    private enum State {
        case idle
        case running
        case finished
        case failed
    }

    /// The most memory liblzma may use; a stream needing more is refused with `.memoryLimit`.
    public let memoryLimit: UInt64
    private let stream = LZMAStream()
    private let slice: UnsafeMutableRawBufferPointer
    private var state = State.idle

    /// Creates a decoder limited to `memoryLimit` bytes of liblzma memory.
    public init(memoryLimit: UInt64 = 1 << 30) {
        self.memoryLimit = memoryLimit
        slice = .allocate(byteCount: Self.sliceSize, alignment: 16)
    }

    deinit {
        slice.deallocate()
    }

    /// Compressed bytes consumed so far.
    public var totalIn: UInt64 { stream.pointer.pointee.total_in }
    /// Decompressed bytes produced so far.
    public var totalOut: UInt64 { stream.pointer.pointee.total_out }

    /// Feeds compressed bytes and delivers the decompressed slices they complete.
    ///
    /// - Throws: `XZError` naming the compressed offset reached: `.format` for input that is not
    ///   .xz, `.data` for corruption, `.memoryLimit`; `.program` after a previous failure or
    ///   after ``finish(output:)``; whatever `output` throws. After any error the decoder is done.
    public func feed(_ input: UnsafeRawBufferPointer, output: (UnsafeRawBufferPointer) throws -> Void) throws {
        try start()
        stream.setInput(input)
        try run(LZMA_RUN, output: output)
    }

    /// Signals the end of input and delivers what remains.
    ///
    /// - Throws: `XZError` `.truncated` when the input ended inside a stream (or was empty);
    ///   otherwise as ``feed(_:output:)``.
    public func finish(output: (UnsafeRawBufferPointer) throws -> Void) throws {
        try start()
        stream.setInput(UnsafeRawBufferPointer(start: nil, count: 0))
        try run(LZMA_FINISH, output: output)
    }

    private func start() throws {
        switch state {
        case .running:
            return
        case .finished:
            throw XZError(code: .program, message: "stream decoder used after finish", offset: totalIn)
        case .failed:
            throw XZError(code: .program, message: "stream decoder used after an earlier error", offset: totalIn)
        case .idle:
            let ret = lzma_stream_decoder(stream.pointer, memoryLimit, amk_lzma_concatenated)
            guard ret == LZMA_OK else {
                state = .failed
                throw XZError(ret, "starting stream decoder")
            }
            state = .running
        }
    }

    private func run(_ action: lzma_action, output: (UnsafeRawBufferPointer) throws -> Void) throws {
        // Whatever escapes below leaves liblzma's view of the input out of step with the caller's.
        state = .failed
        let strm = stream.pointer
        while true {
            stream.setOutput(slice)
            let ret = lzma_code(strm, action)
            let produced = slice.count - strm.pointee.avail_out
            if produced > 0 {
                try output(UnsafeRawBufferPointer(rebasing: slice[..<produced]))
            }
            switch ret {
            case LZMA_OK:
                if action == LZMA_RUN && strm.pointee.avail_in == 0 && strm.pointee.avail_out > 0 {
                    state = .running
                    return
                }
            case LZMA_STREAM_END:
                state = .finished
                return
            default:
                throw error(for: ret)
            }
        }
    }

    private func error(for ret: lzma_ret) -> XZError {
        switch ret {
        case LZMA_FORMAT_ERROR:
            XZError(code: .format, message: "not an xz file (no stream header magic where a stream should start)", offset: totalIn)
        case LZMA_DATA_ERROR:
            XZError(code: .data, message: "corrupt xz data (bad check, CRC or compressed data)", offset: totalIn)
        case LZMA_MEMLIMIT_ERROR:
            XZError(code: .memoryLimit, message: "stream needs more than the memory limit of \(memoryLimit) bytes", offset: totalIn)
        case LZMA_BUF_ERROR:
            XZError(code: .truncated, message: "input ends before the end of the xz stream", offset: totalIn)
        case LZMA_OPTIONS_ERROR:
            XZError(code: .options, message: "stream uses unsupported options or filters", offset: totalIn)
        default:
            XZError(ret, "decoding xz stream", offset: totalIn)
        }
    }
}
