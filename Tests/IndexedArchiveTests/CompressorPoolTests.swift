import Foundation
import TestSupport
import Testing
import XZ

@testable import IndexedArchive

extension EngineSuites {
    @Suite struct CompressorPoolTests {
        /// Decodes a block with the XZ module's decoder, checking its CRC64.
        static func decode(_ block: EncodedBlock) throws -> [UInt8] {
            var out: [UInt8] = []
            let decoder = BlockDecoder()
            try block.bytes.withUnsafeBytes { raw in
                _ = try decoder.decode(block: raw, check: .crc64) { out.append(contentsOf: $0) }
            }
            return out
        }

        static let mib = 1 << 20

        @Test func noiseIsSampledAsIncompressibleAndTextIsNot() throws {
            let sampler = try BlockEncoder(preset: 0, maxChunkSize: CompressorPool.sampleSize)
            let noise = Array(Samples.noise1Point2M.prefix(Self.mib))
            let text = Array(Samples.text2Point5M.prefix(Self.mib))
            func looks(_ bytes: [UInt8]) throws -> Bool {
                try bytes.withUnsafeBytes { try CompressorPool.looksIncompressible($0, sampler: sampler) }
            }
            #expect(try looks(noise))
            #expect(!(try looks(text)))
            #expect(!(try looks(Array(noise.prefix(Self.mib / 2)) + Array(text.prefix(Self.mib / 2)))), "mixed chunks are compressed")
            #expect(!(try looks(Array(noise.prefix(100_000)))), "too short to sample: compressed")
            #expect(!(try looks([UInt8](repeating: 0, count: Self.mib))))
        }

        /// A chunk of zeros is encoded once per size and its block reused: the same bytes LZMA
        /// would make again. Anything else, a single byte off, is encoded as itself.
        @Test func chunksOfZerosReuseTheirBlock() async throws {
            let pool = CompressorPool(workers: 2, preset: 1, extreme: false, chunkSize: Self.mib, compressible: true)
            defer { pool.shutdown() }
            let zeros = [UInt8](repeating: 0, count: Self.mib)
            let first = try await pool.compress(zeros, sequence: 0)
            #expect(pool.zeroBlockSizes == [Self.mib])
            let again = try await pool.compress(zeros, sequence: 1)
            #expect(try again.bytes == first.bytes && Self.decode(again) == zeros)
            // What a fresh encoder makes of the same chunk: the reused block is that block.
            let fresh = try zeros.withUnsafeBytes { try BlockEncoder(preset: 1, maxChunkSize: Self.mib).encode($0) }
            #expect(fresh.bytes == first.bytes)

            var almost = zeros
            almost[Self.mib - 1] = 1
            let other = try await pool.compress(almost, sequence: 2)
            #expect(try Self.decode(other) == almost && other.bytes != first.bytes)
            almost[Self.mib - 1] = 0
            almost[0] = 1
            #expect(try Self.decode(try await pool.compress(almost, sequence: 3)) == almost)
            let short = [UInt8](repeating: 0, count: 1000)
            #expect(try Self.decode(try await pool.compress(short, sequence: 4)) == short)
            #expect(pool.zeroBlockSizes == [Self.mib, 1000])
            // Stored packing stores zeros too.
            let stored = try await pool.compress(zeros, sequence: 5, stored: true)
            #expect(stored.isStored && !first.isStored)
            #expect(zeros.withUnsafeBytes { $0.isAllZero } && ![UInt8]().withUnsafeBytes { $0.isAllZero })
        }

        @Test func blocksRoundTripStoredOrCompressedAsTheyDeserve() async throws {
            let pool = CompressorPool(workers: 2, preset: 1, extreme: false, chunkSize: Self.mib, compressible: true)
            defer { pool.shutdown() }
            let noise = Array(Samples.noise1Point2M.prefix(Self.mib))
            let text = Array(Samples.text2Point5M.prefix(Self.mib))

            let stored = try await pool.compress(noise)
            #expect(stored.isStored)
            #expect(stored.uncompressedSize == UInt64(Self.mib))
            #expect(stored.bytes.count > Self.mib && stored.bytes.count < Self.mib + Self.mib / 100, "stored costs under 1%")
            #expect(try Self.decode(stored) == noise)

            let packed = try await pool.compress(text)
            #expect(!packed.isStored)
            #expect(packed.bytes.count < Self.mib / 3)
            #expect(try Self.decode(packed) == text)

            let whole = try await pool.compressWhole(Array("a small index block".utf8))
            #expect(try Self.decode(whole) == Array("a small index block".utf8))
            let empty = try await pool.compress([])
            #expect(try Self.decode(empty).isEmpty)
        }

        @Test func withoutCompressionEveryBlockIsStored() async throws {
            let pool = CompressorPool(workers: 1, preset: 6, extreme: false, chunkSize: Self.mib, compressible: false)
            defer { pool.shutdown() }
            let text = Array(Samples.text2Point5M.prefix(Self.mib))
            let block = try await pool.compress(text)
            #expect(block.isStored)
            #expect(try Self.decode(block) == text)
        }

        @Test func manyChunksInParallelAllComeBackRight() async throws {
            let pool = CompressorPool(workers: 2, preset: 0, extreme: false, chunkSize: Self.mib, compressible: true)
            defer { pool.shutdown() }
            let chunks = (0..<8).map { i in Array(Samples.text2Point5M[(i * 200_000)..<(i * 200_000 + 300_000)]) }
            let blocks = try await withThrowingTaskGroup(of: (Int, EncodedBlock).self) { group in
                for (i, chunk) in chunks.enumerated() { group.addTask { (i, try await pool.compress(chunk)) } }
                var out: [Int: EncodedBlock] = [:]
                for try await (i, block) in group { out[i] = block }
                return out
            }
            for (i, chunk) in chunks.enumerated() {
                #expect(try Self.decode(blocks[i]!) == chunk, "chunk \(i)")
            }
        }

        @Test func aCancelledCompressionReturnsPromptly() async throws {
            let pool = CompressorPool(workers: 1, preset: 6, extreme: false, chunkSize: 16 * Self.mib, compressible: true)
            defer { pool.shutdown() }
            let text = try await offPool { ArchivePackerTests.slowText(16 * (1 << 20)) }
            let task = Task { try await pool.compress(text) }
            try await Task.sleep(for: .milliseconds(100))
            let cancelled = ContinuousClock.now
            task.cancel()
            let result = await task.result
            let latency = ContinuousClock.now - cancelled
            #expect(throws: CancellationError.self) { try result.get() }
            // Measured against this machine now, not a fixed second: one 256 KiB slice of the same
            // text, encoded alone at preset 6 (the whole 16 MiB would be 64 of them).
            let slice = Array(text.prefix(256 << 10))
            let oneSlice = try await offPool { () -> Duration in
                let start = ContinuousClock.now
                _ = try slice.withUnsafeBytes { try BlockEncoder(preset: 6, maxChunkSize: slice.count).encode($0) }
                return ContinuousClock.now - start
            }
            #expect(
                latency < oneSlice * 4 + .milliseconds(500),
                "a 16 MiB preset-6 encode stopped after \(latency); one slice takes \(oneSlice)")
        }
    }
}
