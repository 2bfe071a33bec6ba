import Foundation
import Synchronization
import TestSupport
import Testing

@testable import IndexedArchive

extension EngineSuites {
    /// A pack's progress: stored bytes, shown as far as the written blocks cover them.
    @Suite struct StoredProgressTests {
        @Test func storedBytesShowOnlyOnceTheirBlocksAreWritten() {
            var progress = StoredProgress(chunkSize: 1000)
            progress.store(2500)
            #expect(progress.shown == 0, "read ahead, nothing written")
            progress.blockWritten(sequence: 0)
            #expect(progress.shown == 1000)
            progress.blockWritten(sequence: 2)
            #expect(progress.shown == 2500, "written past what is stored: what is stored")
            progress.blockWritten(sequence: 1)
            #expect(progress.written == 3000, "a late report of an earlier block takes nothing back")
            progress.store(10)
            #expect(progress.shown == 2510)
        }

        /// Through a pack: the caller's `Progress` never runs ahead of the blocks written, ends at
        /// the content bytes, and adds to what the caller had already completed.
        @Test func aPacksProgressFollowsTheBlocksWritten() async throws {
            let dir = try TemporaryDirectory()
            try dir.file("src/a.txt", sampleBytes(count: 3_000_000, seed: 11, text: true))
            try dir.file("src/b.txt", sampleBytes(count: 1_500_000, seed: 12, text: true))
            let progress = Progress(totalUnitCount: 100 + 4_500_000)
            progress.completedUnitCount = 100
            let chunk = 1 << 20
            let written = Atomic<Int>(0)
            let aheadOfTheWriter = Mutex<[String]>([])
            var options = PackOptions()
            options.chunkSize = chunk
            options.preset = 0
            options.progress = progress
            // Compressions wait a little, so that reading runs ahead of writing as it does on a
            // real tree at a real preset.
            options.compressionHook = { _ in usleep(50_000) }
            options.onEvent = { event in
                switch event {
                case .blockWritten(let sequence, _):
                    // Reported before the progress moves: the bytes written so far, at most.
                    written.store((sequence + 1) * chunk, ordering: .sequentiallyConsistent)
                case .chunkSerialized, .entryStored:
                    let shown = progress.completedUnitCount - 100
                    let limit = written.load(ordering: .sequentiallyConsistent)
                    if shown > limit { aheadOfTheWriter.withLock { $0.append("\(shown) shown, \(limit) written") } }
                default:
                    break
                }
            }
            _ = try await ArchivePacker.pack([PackSource(path: dir.path + "/src")], to: .file(dir.path + "/a.tar.xz"), options: options)
            #expect(aheadOfTheWriter.withLock { $0 }.isEmpty)
            #expect(progress.completedUnitCount == 100 + 4_500_000)
        }
    }
}
