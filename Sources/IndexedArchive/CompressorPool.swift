import Foundation
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
    let compressible: Bool
    private let threads: WorkerThreadPool

    /// Sampling: this many windows of this size spread over a chunk, each compressed at preset 0.
    static let sampleCount = 16
    static let sampleSize = 16 * 1024
    /// A window that shrinks by less than this fraction counts as incompressible.
    static let incompressibleRatio = 0.97

    package init(workers: Int, preset: Int, extreme: Bool, chunkSize: Int, compressible: Bool) {
        self.workers = workers
        self.preset = preset
        self.extreme = extreme
        self.chunkSize = chunkSize
        self.compressible = compressible
        self.threads = WorkerThreadPool(threads: workers, name: "amk-compress")
    }

    /// Compresses one chunk into one block: stored when packing without compression or when the
    /// sample says the data will not compress, else LZMA2 at the preset.
    ///
    /// The job shares nothing with the caller, so a cancelled caller does not wait for it: the job
    /// stops at its next 64 KiB slice, or is left behind if a hook made it hang.
    func compress(_ bytes: [UInt8], sequence: Int = 0, watchdog: Watchdog? = nil,
                  hook: (@Sendable (Int) throws -> Void)? = nil) async throws -> EncodedBlock {
        let preset = self.preset, extreme = self.extreme, chunkSize = self.chunkSize, compressible = self.compressible
        watchdog?.begin(.compress)
        defer { watchdog?.end(.compress) }
        return try await threads.run(abandonOnCancel: true) { flag in
            try hook?(sequence)
            let encoder = try CompressorPool.threadEncoder(key: "amk.encoder", preset: preset, extreme: extreme, maxChunkSize: chunkSize)
            return try bytes.withUnsafeBytes { raw in
                if !compressible { return try encoder.encodeStored(raw) }
                let sampler = try CompressorPool.threadEncoder(key: "amk.sampler", preset: 0, extreme: false, maxChunkSize: CompressorPool.sampleSize)
                if try CompressorPool.looksIncompressible(raw, sampler: sampler) {
                    return try encoder.encodeStored(raw)
                }
                return try encoder.encode(raw, sliceSize: CompressorPool.sliceSize, isCancelled: {
                    watchdog?.beat(.compress)
                    return flag.isCancelled
                })
            }
        }
    }

    /// Input bytes between two cancellation checks (and heartbeats): about 20–40 ms of preset-6
    /// work on this class of machine, so a cancelled pack returns within the 100 ms budget.
    static let sliceSize = 64 * 1024

    /// Compresses a block that is not a data chunk (the indexes), with no sampling.
    func compressWhole(_ bytes: [UInt8]) async throws -> EncodedBlock {
        let preset = self.preset, extreme = self.extreme, chunkSize = self.chunkSize
        return try await threads.run { flag in
            let encoder = try CompressorPool.threadEncoder(key: "amk.encoder", preset: preset, extreme: extreme, maxChunkSize: chunkSize)
            return try bytes.withUnsafeBytes { try encoder.encode($0, isCancelled: { flag.isCancelled }) }
        }
    }

    /// Whether every sampled window of `bytes` fails to compress at preset 0.
    ///
    /// Sixteen 16 KiB windows cost about 1.5% of the chunk at the fastest preset, against a full
    /// preset-6 encode that would be thrown away. Requiring every window to fail keeps mixed chunks
    /// (media next to text) on the compressing path.
    static func looksIncompressible(_ bytes: UnsafeRawBufferPointer, sampler: BlockEncoder) throws -> Bool {
        guard bytes.count >= sampleCount * sampleSize * 2 else { return false }
        let stride = (bytes.count - sampleSize) / (sampleCount - 1)
        for index in 0..<sampleCount {
            let start = index * stride
            let window = UnsafeRawBufferPointer(rebasing: bytes[start..<start + sampleSize])
            let block = try sampler.encode(window)
            if Double(block.bytes.count) < Double(sampleSize) * incompressibleRatio { return false }
        }
        return true
    }

    /// The calling thread's encoder for these settings, made on first use. Only pool threads call
    /// this, and each thread only ever touches its own dictionary.
    static func threadEncoder(key: String, preset: Int, extreme: Bool, maxChunkSize: Int) throws -> BlockEncoder {
        let dictionary = Thread.current.threadDictionary
        if let encoder = dictionary[key] as? BlockEncoder { return encoder }
        let encoder = try BlockEncoder(preset: preset, extreme: extreme, maxChunkSize: maxChunkSize)
        dictionary[key] = encoder
        return encoder
    }

    /// Lets the threads exit once their queued work is done.
    package func shutdown() { threads.shutdown() }

    /// Waits until the threads have exited, or `timeout` passes.
    package func awaitExit(timeout: Duration) async -> Bool { await threads.awaitExit(timeout: timeout) }
}
