import Foundation
import Synchronization
import XZ

/// Decodes the blocks of a file whose xz Index lists them, for every reader of the file: a
/// listing or extraction of a foreign archive, a verification, a full or selective extraction
/// and a member read of ours.
///
/// Blocks up to `maxBufferedBlockSize` are decoded whole, ahead, in parallel on the scheduler's
/// threads, and handed on in order; a larger block is decoded in slices of ``streamPiece`` bytes
/// when its turn comes. Peak memory is therefore about `(parallelism + 1) * maxBufferedBlockSize`
/// whatever the file says, and a few MiB for a block of any size.
final class BlockScheduler: Sendable {
    let file: ArchiveFile
    let fileIndex: XZFileIndex
    /// Blocks that decode to at most this many bytes are decoded whole, ahead, in parallel;
    /// larger ones are streamed.
    let maxBufferedBlockSize: UInt64
    /// The most memory one block decoder may use (mostly the LZMA2 dictionary).
    let maxDecoderMemory: UInt64
    /// The threads that decode blocks, started on first use and kept for the reader's life:
    /// starting threads for every member read cost more than decoding a small block.
    private let threads = Mutex<WorkerThreadPool?>(nil)
    /// Blocks whose decoding has started, from their first byte (for tests: reading members
    /// that share a block must decode it once).
    let decodes = Atomic<Int>(0)
    /// Decoded blocks, pieces and reads that filled an array of an earlier one (for tests: a
    /// reading must not map fresh memory for every block).
    let reusedBuffers = Atomic<Int>(0)

    init(file: ArchiveFile, fileIndex: XZFileIndex, maxBufferedBlockSize: UInt64, maxDecoderMemory: UInt64) {
        self.file = file
        self.fileIndex = fileIndex
        self.maxBufferedBlockSize = maxBufferedBlockSize
        self.maxDecoderMemory = maxDecoderMemory
    }

    deinit {
        threads.withLock { $0?.shutdown() }
    }

    /// The decode threads, one per active core, started on first use; also where the reader
    /// runs other work too long for the cooperative pool (matching a selection).
    var pool: WorkerThreadPool {
        threads.withLock { pool in
            if let pool { return pool }
            let started = WorkerThreadPool(threads: PackOptions.activeCores, name: "amk-decode")
            pool = started
            return started
        }
    }

    /// A block being streamed, shared by the jobs that decode it one piece after another.
    private final class StreamedBlock: Sendable {
        private let stream: Mutex<BlockStream>

        init(_ stream: sending BlockStream) {
            self.stream = Mutex(stream)
        }

        /// The next piece of at most `maxBytes`, never past `limit` bytes of the block (nil: the
        /// whole block, its check verified), and whether the block's check has passed with it;
        /// nil when there is nothing more.
        func next(maxBytes: Int, limit: UInt64?, flag: CancellationFlag, buffers: ByteArrayPool) throws -> ([UInt8], verified: Bool)? {
            try stream.withLock { stream -> ([UInt8], verified: Bool)? in
                if stream.isFinished { return nil }
                var wanted = maxBytes
                if let limit {
                    guard stream.delivered < limit else { return nil }
                    wanted = Int(min(UInt64(maxBytes), limit - stream.delivered))
                }
                var out = buffers.take(minimumCapacity: wanted)
                try stream.decode(maxBytes: wanted, isCancelled: { flag.isCancelled }) { out.append(contentsOf: $0) }
                if limit == nil, !stream.isFinished, let size = stream.uncompressedSize, stream.delivered == size {
                    // The block's last byte is out: its check comes next, and this piece is then
                    // verified with it (a byte more than the index gives is damage, and throws).
                    try stream.decode(maxBytes: 1, isCancelled: { flag.isCancelled }) { out.append(contentsOf: $0) }
                }
                return (out, stream.isFinished)
            }
        }
    }

    /// Bytes of a streamed block decoded per job: small enough to keep memory flat, large enough
    /// that the hops between threads cost nothing next to the decoding.
    static let streamPiece = 1 << 20

    /// Decodes blocks `range` and hands their bytes between tar offsets `from` and `to` to
    /// `deliver`, in order. Decoding stops at `to`: a block decoded only in part has its check
    /// unverified (a block decoded to its end always has it verified).
    ///
    /// Blocks of at most ``maxBufferedBlockSize`` bytes are decoded whole, ahead, on up to
    /// `parallelism` threads, with at most `parallelism + 1` waiting; each is delivered as one
    /// piece. A larger block is decoded when its turn comes, in pieces of ``streamPiece`` bytes
    /// delivered as they come. No buffer is sized from a value in the file beyond those bounds.
    func decode(
        _ range: ClosedRange<Int>, from: UInt64 = 0, to: UInt64, parallelism: Int, watchdog: Watchdog? = nil,
        deliver: (DecodedPiece) async throws -> Void
    ) async throws {
        let fileIndex = self.fileIndex
        let file = self.file
        let memory = maxDecoderMemory
        let buffered = maxBufferedBlockSize
        let pool = self.pool
        // Every decoded block or piece and every read of compressed bytes comes from here and goes
        // back once delivered: at most `window` blocks wait, `parallelism` decode, each reading.
        let window = max(1, parallelism) + 1
        let buffers = ByteArrayPool(limit: window + max(1, parallelism) + 1)
        let inputs = ByteArrayPool(limit: max(1, parallelism) + 1)
        defer {
            reusedBuffers.add(
                buffers.reuses.load(ordering: .relaxed) + inputs.reuses.load(ordering: .relaxed), ordering: .relaxed)
        }

        /// How much of a block to decode: nil for all of it (its check then verified).
        func limit(_ record: XZIndexRecord) -> UInt64? {
            // The xz Index has checked that every block's end fits below 2^63.
            to < record.uncompressedOffset + record.uncompressedSize ? to - min(to, record.uncompressedOffset) : nil
        }
        /// Hands on the part of `bytes` (which start at tar offset `at`) between `from` and `to`.
        /// The bytes go back to `buffers` once delivered: a consumer that needs them longer
        /// keeps its own copy of the array, which the next use then does not share.
        func hand(_ bytes: consuming [UInt8], at: UInt64, verifiedThrough: UInt64? = nil) async throws {
            let bytes = consume bytes
            let end = at + UInt64(bytes.count)
            let lower = max(from, at)
            let upper = min(to, end)
            if lower < upper {
                try await deliver(
                    DecodedPiece(bytes: bytes, range: Int(lower - at)..<Int(upper - at), offset: lower, verifiedThrough: verifiedThrough))
            }
            buffers.recycle(bytes)
        }

        try await withThrowingTaskGroup(of: (Int, Result<[UInt8], ArchiveError>).self) { group in
            var next = range.lowerBound
            // A block's damage waits for its turn: the blocks before it are sound, and are
            // handed on first (a failure of the second block, decoded before the first, lost the
            // first block's members).
            var pending: [Int: Result<[UInt8], ArchiveError>] = [:]
            var failed = false
            var deliverNext = range.lowerBound
            // The pool has a thread per core, shared by the reader's calls: at most
            // `parallelism` of this call's blocks decode at once.
            var decoding = 0
            while deliverNext <= range.upperBound {
                while !failed && next <= range.upperBound && (next - deliverNext) < window && decoding < max(1, parallelism) {
                    let blockIndex = next
                    next += 1
                    let record = fileIndex.blocks[blockIndex]
                    guard record.uncompressedSize <= buffered else { continue }  // streamed in its turn
                    let check = fileIndex.check(ofBlock: blockIndex)
                    let stop = limit(record)
                    decoding += 1
                    decodes.add(1, ordering: .relaxed)
                    group.addTask {
                        do {
                            let bytes = try await pool.runWithCodecs { flag, codecs in
                                // Timed from when a thread takes it, like a compression.
                                let job = watchdog?.begin(.compress, job: "decoding block \(blockIndex)")
                                defer { if let job { watchdog?.end(job) } }
                                return try BlockScheduler.decodeBuffered(
                                    file: file, record: record, check: check, limit: stop,
                                    decoder: codecs.decoder(memoryLimit: memory), flag: flag, buffers: buffers, inputs: inputs)
                            }
                            return (blockIndex, .success(bytes))
                            // cancellation: only the block's own failure waits for its turn; a
                            // cancellation (or anything else) ends the group at once.
                        } catch let error as ArchiveError {
                            return (blockIndex, .failure(error))
                        }
                    }
                }
                let record = fileIndex.blocks[deliverNext]
                if record.uncompressedSize > buffered {
                    let check = fileIndex.check(ofBlock: deliverNext)
                    let stop = limit(record)
                    decodes.add(1, ordering: .relaxed)
                    let block = StreamedBlock(
                        BlockStream(
                            file: file, record: record, check: check,
                            decoder: BlockDecoder(memoryLimit: memory), inputs: inputs))
                    var at = record.uncompressedOffset
                    let blockIndex = deliverNext
                    while let (piece, verified) = try await pool.run({ [at] flag in
                        let job = watchdog?.begin(.compress, job: "decoding block \(blockIndex) at \(at)")
                        defer { if let job { watchdog?.end(job) } }
                        return try block.next(maxBytes: BlockScheduler.streamPiece, limit: stop, flag: flag, buffers: buffers)
                    }) {
                        // Handed on before the block's check: verified only as far as the block's start.
                        let count = UInt64(piece.count)
                        try await hand(piece, at: at, verifiedThrough: verified ? nil : record.uncompressedOffset)
                        at += count
                    }
                    deliverNext += 1
                    continue
                }
                if let ready = pending.removeValue(forKey: deliverNext) {
                    try await hand(try ready.get(), at: record.uncompressedOffset)
                    deliverNext += 1
                    continue
                }
                guard let (done, result) = try await group.next() else { break }
                decoding -= 1
                if case .failure = result { failed = true }
                pending[done] = result
            }
        }
    }

    /// Decodes (the first `limit` bytes of) a block of at most ``maxBufferedBlockSize`` bytes
    /// into one array taken from `buffers`, on a decode thread, with that thread's decoder,
    /// reading the compressed bytes into arrays of `inputs`.
    static func decodeBuffered(
        file: ArchiveFile, record: XZIndexRecord, check: XZCheck, limit: UInt64?,
        decoder: BlockDecoder, flag: CancellationFlag, buffers: ByteArrayPool? = nil, inputs: ByteArrayPool? = nil
    ) throws -> [UInt8] {
        let stream = BlockStream(file: file, record: record, check: check, decoder: decoder, inputs: inputs)
        let wanted = min(limit ?? record.uncompressedSize, record.uncompressedSize)
        // At most the buffered-block bound, the caller has checked.
        var out = ByteArrayPool.take(from: buffers, minimumCapacity: Int(wanted))
        try stream.decode(maxBytes: limit == nil ? .max : Int(wanted), isCancelled: { flag.isCancelled }) {
            out.append(contentsOf: $0)
        }
        return out
    }
}
