import Foundation
import Synchronization
import XZ

/// Compresses chunks into xz blocks on threads of its own, one LZMA encoder per thread.
///
/// The threads are not Swift's cooperative pool: a 16 MiB encode takes seconds, and the watchdog
/// and the coordinating actors must keep running meanwhile. Each thread keeps its encoder across
/// chunks, so the 90-odd MiB of match-finder state is allocated once per thread, not per block.
package final class CompressorPool: Sendable {
    package let workers: Int
    let preset: Int
    let extreme: Bool
    let chunkSize: Int
    let niceLength: Int?
    let dictionarySize: Int?
    let compressible: Bool
    private let threads: WorkerThreadPool
    /// The block each size of chunk of zeros encodes to, once one has been encoded: a sparse
    /// disk image or a preallocated database is mostly such chunks, and LZMA takes 45 ms of a
    /// core for each 8 MiB of them to make the same bytes again (a block is encoded on its own,
    /// so equal chunks give equal blocks).
    private let zeroBlocks = Mutex<[Int: EncodedBlock]>([:])

    /// Sampling: this many windows of this size spread over a chunk, each compressed at preset 0.
    static let sampleCount = 64
    static let sampleSize = 4 * 1024
    /// A window that shrinks by less than this fraction counts as incompressible.
    static let incompressibleRatio = 0.97
    /// Windows allowed to compress in a chunk that is still stored: one that lands on a tar header
    /// and its padding between two photos must not send 16 MiB of noise through LZMA.
    static let compressibleWindowsTolerated = 3
    /// The whole sample must still shrink by less than this fraction.
    static let storedSampleRatio = 0.95

    package init(
        workers: Int, preset: Int, extreme: Bool, chunkSize: Int, niceLength: Int? = nil, dictionarySize: Int? = nil, compressible: Bool
    ) {
        self.workers = workers
        self.preset = preset
        self.extreme = extreme
        self.chunkSize = chunkSize
        self.niceLength = niceLength
        self.dictionarySize = dictionarySize
        self.compressible = compressible
        self.threads = WorkerThreadPool(threads: workers, name: "amk-compress")
    }

    /// Compresses one chunk into one block: stored when packing without compression or when the
    /// sample says the data will not compress, else LZMA2 at the preset.
    ///
    /// The job shares nothing with the caller, so a cancelled caller does not wait for it: the job
    /// stops at its next 32 KiB slice, or is left behind if a hook made it hang.
    /// `stored` (members classified incompressible) skips the sample and LZMA altogether;
    /// `branch` (a chunk that is mostly machine code) puts that filter before LZMA2.
    func compress(
        _ bytes: [UInt8], sequence: Int = 0, stored: Bool = false, branch: BranchFilter? = nil, watchdog: Watchdog? = nil,
        hook: (@Sendable (Int) throws -> Void)? = nil
    ) async throws -> EncodedBlock {
        let preset = self.preset
        let extreme = self.extreme
        let chunkSize = self.chunkSize
        let niceLength = self.niceLength
        let dictionarySize = self.dictionarySize
        let compressible = self.compressible
        return try await threads.runWithCodecs(abandonOnCancel: true) { flag, codecs in
            // Timed from the moment a thread takes it: waiting in the queue is not compressing.
            let job = watchdog?.begin(.compress, job: "block \(sequence)")
            defer { if let job { watchdog?.end(job) } }
            try hook?(sequence)
            let encoder = try codecs.encoder(
                preset: preset, extreme: extreme, maxChunkSize: chunkSize, niceLength: niceLength, dictionarySize: dictionarySize)
            return try bytes.withUnsafeBytes { raw in
                if !compressible || stored { return try encoder.encodeStored(raw) }
                let zeros = raw.isAllZero
                if zeros, let block = self.zeroBlocks.withLock({ $0[raw.count] }) { return block }
                let sampler = try codecs.encoder(preset: 0, extreme: false, maxChunkSize: CompressorPool.sampleSize)
                if try CompressorPool.looksIncompressible(raw, sampler: sampler) {
                    return try encoder.encodeStored(raw)
                }
                let block = try encoder.encode(
                    // A block of zeros is kept and reused for any chunk of zeros of its size: it
                    // gains nothing from the filter, and is reused for chunks that are not code.
                    raw, branch: zeros ? nil : branch, sliceSize: CompressorPool.sliceSize,
                    isCancelled: {
                        if let job { watchdog?.beat(job) }
                        return flag.isCancelled
                    })
                if zeros { self.zeroBlocks.withLock { $0[raw.count] = block } }
                return block
            }
        }
    }

    /// The sizes of chunk of zeros whose block is kept (for tests).
    var zeroBlockSizes: Set<Int> { zeroBlocks.withLock { Set($0.keys) } }

    /// Input bytes between two cancellation checks (and heartbeats): about 10–20 ms of preset-6
    /// work on this class of machine, so a cancelled pack returns within the 100 ms budget even
    /// when a busy machine stretches each slice. With 64 KiB the stress suite's preset-6 p99 was
    /// 72 ms on a quiet machine but 146 ms under load; an lzma_code call per 32 KiB costs nothing
    /// measurable.
    static let sliceSize = 32 * 1024

    /// Compresses a block that is not a data chunk (the indexes), with no sampling.
    func compressWhole(_ bytes: [UInt8]) async throws -> EncodedBlock {
        let preset = self.preset
        let extreme = self.extreme
        let chunkSize = self.chunkSize
        let niceLength = self.niceLength
        let dictionarySize = self.dictionarySize
        return try await threads.runWithCodecs { flag, codecs in
            let encoder = try codecs.encoder(
                preset: preset, extreme: extreme, maxChunkSize: chunkSize, niceLength: niceLength, dictionarySize: dictionarySize)
            return try bytes.withUnsafeBytes { try encoder.encode($0, isCancelled: { flag.isCancelled }) }
        }
    }

    /// Whether the sampled windows of `bytes` say it will not compress at preset 0.
    ///
    /// Sixty-four 4 KiB windows cost about 1.5% of a 16 MiB chunk at the fastest preset, against a
    /// full preset-6 encode that would be thrown away. A chunk is stored only when nearly every
    /// window fails to compress (a few may hit tar headers) and the sample as a whole does not
    /// shrink, so chunks that are partly text stay on the compressing path.
    static func looksIncompressible(_ bytes: UnsafeRawBufferPointer, sampler: BlockEncoder) throws -> Bool {
        guard bytes.count >= sampleCount * sampleSize * 2 else { return false }
        let stride = (bytes.count - sampleSize) / (sampleCount - 1)
        var compressible = 0
        var total = 0
        for index in 0..<sampleCount {
            let start = index * stride
            let window = UnsafeRawBufferPointer(rebasing: bytes[start..<start + sampleSize])
            let size = try sampler.encode(window).bytes.count
            total += min(size, sampleSize)
            if Double(size) < Double(sampleSize) * incompressibleRatio {
                compressible += 1
                if compressible > compressibleWindowsTolerated { return false }
            }
        }
        return Double(total) >= Double(sampleCount * sampleSize) * storedSampleRatio
    }

    /// Lets the threads exit once their queued work is done.
    package func shutdown() { threads.shutdown() }

    /// Waits until the threads have exited, or `timeout` passes.
    package func awaitExit(timeout: Duration) async -> Bool { await threads.awaitExit(timeout: timeout) }
}
