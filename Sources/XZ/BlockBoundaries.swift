/// Where the blocks of one .xz stream end in its decompressed output, read from their Block
/// Headers as the compressed bytes go by, ahead of liblzma's decoding of them.
///
/// liblzma's stream decoders say nothing of blocks: the output of a block comes out as it is
/// decoded, and its check is only verified at its end. Knowing where each block ends in the
/// output tells a reader which bytes have passed their check: once the decoder has delivered a
/// byte past a block's end, it has verified that block (both decoders finish a block, check
/// included, before any byte of the next one comes out). Headers are not trusted for more: a
/// header that lies about its sizes makes liblzma fail at that block before any byte past the
/// end it declared comes out, so a lie can only delay the verification, never advance it.
///
/// The walk gives up for the rest of the stream at the first header it cannot use: one without
/// both sizes (`xz` writes none in a single-threaded stream), one it cannot parse, or the xz
/// Index. Then only the end of the stream verifies what came before it.
struct BlockBoundaries {
    private enum Phase {
        /// Gathering the 12-byte Stream Header.
        case streamHeader
        /// Expecting a Block Header's first byte, or gathering a header of `size` bytes.
        case blockHeader(size: Int?)
        /// Passing over a block's data, padding and check.
        case body(remaining: UInt64)
        /// No more block ends are known in this stream.
        case stopped
    }

    /// More ends than this waiting ahead of the output (a stream of empty blocks coalesces
    /// into one) and the walk stops: a hostile stream cannot make the list grow without bound.
    static let maxPending = 1 << 16

    private var phase = Phase.streamHeader
    /// Where the block whose header is being read starts.
    private var blockStart: UInt64 = 0
    private var gathered: [UInt8] = []
    private var check = XZCheck.none
    /// Whether the stream's header was read and says its blocks carry no check.
    private(set) var isUnchecked = false
    /// The decompressed size of the blocks walked so far.
    private var walkedOutput: UInt64 = 0
    /// Ends of blocks walked but not yet known to be verified, ascending, relative to the
    /// stream's first output byte.
    private var ends: [UInt64] = []
    private var endsStart = 0
    /// Where each of ``ends``' blocks starts in the stream's compressed bytes, and where it
    /// ends there (its check included).
    private var starts: [UInt64] = []
    private var inputEnds: [UInt64] = []
    /// Compressed bytes of the stream walked so far.
    private var walkedInput: UInt64 = 0
    /// Where the first block that may still fail starts, in the stream's compressed bytes, when
    /// its header was read and `output` (the stream's bytes delivered) falls short of its end:
    /// then damage the decoder reports lies in it (the decoder's own offset is how far it has
    /// read, blocks ahead with several threads). Once its bytes are all out, its check may have
    /// failed, or the next block's start, or the xz Index after it: nil then.
    func firstUnverifiedBlock(output: UInt64) -> UInt64? {
        guard endsStart < starts.count, output < ends[endsStart] else { return nil }
        return starts[endsStart]
    }

    /// Reads `bytes`, the stream's compressed bytes following those read before.
    mutating func walk(_ bytes: UnsafeRawBufferPointer) {
        var at = 0
        defer { walkedInput += UInt64(at) }
        while at < bytes.count {
            switch phase {
            case .stopped:
                return
            case .streamHeader:
                at += gather(bytes, from: at, upTo: StreamHeader.size)
                guard gathered.count == StreamHeader.size else { return }
                guard let decoded = try? gathered.withUnsafeBytes({ try StreamHeader.decode($0) }) else { return stop() }
                check = decoded
                isUnchecked = decoded == .none
                gathered = []
                phase = .blockHeader(size: nil)
            case .blockHeader(size: nil):
                blockStart = walkedInput + UInt64(at)
                let first = bytes[at]
                // The xz Index indicator: no block follows in this stream.
                guard first != 0 else { return stop() }
                phase = .blockHeader(size: (Int(first) + 1) * 4)
            case .blockHeader(size: let size?):
                at += gather(bytes, from: at, upTo: size)
                guard gathered.count == size else { return }
                let info = try? gathered.withUnsafeBytes { try BlockHeaderInfo.parse($0, check: check) }
                gathered = []
                guard let info, let total = info.totalSize(check: check), let output = info.uncompressedSize else { return stop() }
                let (end, overflow) = walkedOutput.addingReportingOverflow(output)
                guard !overflow else { return stop() }
                walkedOutput = end
                if ends.last != end {
                    guard ends.count - endsStart < Self.maxPending else { return stop() }
                    ends.append(end)
                    starts.append(blockStart)
                    inputEnds.append(blockStart + total)
                } else if !inputEnds.isEmpty {
                    // An empty block after it: the same end of output, verified a little later.
                    inputEnds[inputEnds.count - 1] = blockStart + total
                }
                phase = .body(remaining: total - UInt64(info.headerSize))
            case .body(let remaining):
                let step = min(remaining, UInt64(bytes.count - at))
                at += Int(step)
                phase = remaining == step ? .blockHeader(size: nil) : .body(remaining: remaining - step)
            }
        }
    }

    /// The end of the last block known to be verified once the decoder has delivered `output`
    /// bytes of the stream, if any block is: an end that the output has gone past, or, given
    /// `input`, one whose compressed bytes, check included, lie within the first `input` bytes
    /// of the stream. Pass `input` only for a decoder that reads its input in order and stops at
    /// a failed check (liblzma's single-threaded one): then a block whose check it has read has
    /// passed, though nothing after it has come out (the xz Index after it may be damaged, or
    /// the next block's start). After a call that `failed`, the last check read may be what
    /// failed: only a block whose check lies before the last byte read counts (a failed check
    /// stops the decoder just past it; damage after a block, only once it has read more).
    /// liblzma's threads read ahead of what they have checked.
    mutating func verified(byOutput output: UInt64, input: UInt64? = nil, failed: Bool = false) -> UInt64? {
        func read(_ end: UInt64) -> Bool { input.map { failed ? end < $0 : end <= $0 } ?? false }
        var last: UInt64?
        while endsStart < ends.count, ends[endsStart] < output || read(inputEnds[endsStart]) {
            last = ends[endsStart]
            endsStart += 1
        }
        if endsStart > 4096, endsStart * 2 > ends.count {
            ends.removeFirst(endsStart)
            starts.removeFirst(endsStart)
            inputEnds.removeFirst(endsStart)
            endsStart = 0
        }
        return last
    }

    private mutating func gather(_ bytes: UnsafeRawBufferPointer, from at: Int, upTo size: Int) -> Int {
        let taken = min(size - gathered.count, bytes.count - at)
        gathered.append(contentsOf: bytes[at..<(at + taken)])
        return taken
    }

    private mutating func stop() {
        phase = .stopped
        gathered = []
    }
}
