import AsyncAlgorithms
import Foundation
import Logging
import Tar
import XZ

/// Packs files and directories into an indexed, pixz-compatible `.tar.xz`.
///
/// ```swift
/// let summary = try await ArchivePacker.pack(
///     [PackSource(path: "/data/app", archivePath: "app")],
///     to: .file("/tmp/app.tar.xz"))
/// ```
/// The pipeline: ``ArchiveBuilder`` walks and serialises on I/O threads, a bounded set of chunks
/// is compressed in parallel on threads of the compressor pool, and one writer puts the blocks
/// in order. Cancelling the calling task stops every stage and leaves nothing at the destination.
public enum ArchivePacker {
    /// The writer's name and version, stored in every archive's metadata as `writer`.
    public static let writerVersion = "AppMigration 0.1.0"

    /// Packs `sources` (each a file or a directory, under its archive path) into one archive.
    ///
    /// Unless `options.watchdog` is given or `options.stallPolicy` is nil, the pack runs under a
    /// ``Watchdog``: a stage silent past its timeout cancels it with an `ArchiveError` `.stalled`
    /// naming the stage.
    @discardableResult
    public static func pack(
        _ sources: [PackSource], to destination: ArchiveDestination,
        options: PackOptions = PackOptions()
    ) async throws -> PackSummary {
        let logger = options.logger
        logger.debug(
            "packing",
            metadata: [
                "sources": .array(sources.map { .string(TerminalSafe.name($0.path)) }),
                "destination": "\(TerminalSafe.name("\(destination)"))",
                "preset": "\(options.preset)", "workers": "\(options.workers)", "chunkSize": "\(options.chunkSize)",
                "niceLength": "\(options.effectiveNiceLength.map(String.init) ?? "preset's")",
                "dictionarySize": "\(options.effectiveDictionarySize.map(String.init) ?? "preset's")"
            ])
        do {
            let summary: PackSummary
            if options.watchdog == nil, let policy = options.stallPolicy {
                summary = try await Watchdog.supervise(policy: policy) { watchdog in
                    var watched = options
                    watched.watchdog = watchdog
                    return try await withBuilder(to: destination, options: watched) { builder in
                        try await builder.append(contentsOf: sources)
                    }.summary
                }
            } else {
                summary = try await withBuilder(to: destination, options: options) { builder in
                    try await builder.append(contentsOf: sources)
                }.summary
            }
            logger.info(
                "packed",
                metadata: [
                    "entries": "\(summary.entries)", "tarBytes": "\(summary.tarBytes)", "archiveBytes": "\(summary.archiveBytes)",
                    "blocks": "\(summary.blocks)", "storedBlocks": "\(summary.storedBlocks)",
                    "x86Blocks": "\(summary.x86Blocks)", "seconds": "\(summary.seconds)"
                ])
            return summary
        } catch is CancellationError {
            logger.debug("pack cancelled")
            throw CancellationError()
        } catch {
            logger.error("pack failed", metadata: ["error": "\(TerminalSafe.message("\(error)"))"])
            throw error
        }
    }

    /// Opens an archive, lets `body` append to it, then finishes it.
    ///
    /// `body` runs in a child task beside the one that compresses and writes what it appends, so
    /// it must be `@Sendable`. If either fails, the other is cancelled and this function throws
    /// the first failure (a `CancellationError` only if the other has no error of its own):
    /// `body`'s own error, or the compress-and-write stage's (a full disk, a stall), which `body`
    /// sees as a `CancellationError` from its append or its own awaits.
    /// Whatever the failure, or if the task is cancelled, the archive is abandoned: nothing
    /// appears at a file destination. The builder must not be used after `body` returns.
    public static func withBuilder<Result: Sendable>(
        to destination: ArchiveDestination,
        options: PackOptions = PackOptions(),
        _ body: @Sendable (ArchiveBuilder) async throws -> Result
    ) async throws -> (result: Result, summary: PackSummary) {
        let options = try options.validated()
        let start = ContinuousClock.now
        var metadata = options.metadata
        metadata["writer"] = writerVersion
        let io = WorkerThreadPool(threads: 2, name: "amk-io")
        let compressor = CompressorPool(
            workers: options.workers, preset: options.preset, extreme: options.extreme,
            chunkSize: options.chunkSize, niceLength: options.effectiveNiceLength, dictionarySize: options.effectiveDictionarySize,
            compressible: options.compressible)
        let onEvent = options.onEvent
        let logger = options.logger
        let report = options.progress.map { ProgressReport($0, chunkSize: options.chunkSize) }
        let onBlockWritten: @Sendable (Int, UInt64) -> Void = { sequence, bytes in
            logger.trace("block written", metadata: ["block": "\(sequence)", "archiveBytes": "\(bytes)"])
            onEvent?(.blockWritten(sequence: sequence, archiveBytes: bytes))
            report?.blockWritten(sequence: sequence)
        }
        let writer = ArchiveWriter(destination: destination, io: io, watchdog: options.watchdog, onBlockWritten: onBlockWritten)
        do {
            try await writer.open()
            // A chunk's walk: the builder serialises it into the channel, the pipeline takes it,
            // compresses it and hands the block to the writer.
            let channel = AsyncChannel<Chunk>()
            let limit = options.chunksInFlight
            // A chunk's array goes back once compressed, for the serializer's next one: the
            // chunks in flight and the serializer's own are all there ever are.
            // (Only whole chunks: the pieces of the last stretch are never needed again.)
            let buffers = ByteArrayPool(limit: limit + PackOptions.serializerChunks, smallest: options.chunkSize)
            let builder = try ArchiveBuilder(
                options: options, io: io, channel: channel, metadata: metadata, report: report, buffers: buffers,
                ownArchive: await writer.replacing)
            let (result, closing) = try await withoutActuallyEscaping(body) { body in
                try await withThrowingTaskGroup(of: PackTask<Result>.self) { group in
                    group.addTask {
                        do {
                            let result = try await body(builder)
                            return .built(result, try await builder.close())
                        } catch {
                            // The pipeline may be waiting for a chunk: no more will come.
                            channel.finish()
                            throw error
                        }
                    }
                    group.addTask {
                        try await runPipeline(
                            chunks: channel, compressor: compressor, writer: writer, limit: limit, options: options,
                            buffers: buffers)
                        return .pipelineDone
                    }
                    // The first error either task throws leaves the group, which cancels the other.
                    // A CancellationError says least: the other task is cancelled too, and its own
                    // error, if it has one, is the one thrown (a body that gives up on cancellation
                    // with an error of its own, say).
                    var built: (Result, ArchiveBuilder.Closing)?
                    var cancellation: CancellationError?
                    while let outcome = await group.nextResult() {
                        switch outcome {
                        case .success(.built(let result, let closing)): built = (result, closing)
                        case .success(.pipelineDone): continue
                        case .failure(let error as CancellationError):
                            cancellation = error
                            group.cancelAll()
                        case .failure(let error): throw error
                        }
                    }
                    if let cancellation { throw cancellation }
                    guard let built else { preconditionFailure("the body's task ended with neither a result nor an error") }
                    return built
                }
            }
            async let richBlock = compressor.compressWhole(
                closing.recorded.richIndex(chunkSize: UInt64(options.chunkSize), metadata: metadata))
            async let pixzBlock = compressor.compressWhole(closing.recorded.pixzIndex())
            try await writer.finish(trailingBlocks: [try await richBlock, try await pixzBlock])
            let summary = PackSummary(
                entries: closing.recorded.count, fileBytes: closing.fileBytes, tarBytes: closing.recorded.tarSize,
                archiveBytes: await writer.bytesWritten, blocks: await writer.dataBlocks,
                storedBlocks: await writer.storedBlocks, x86Blocks: await writer.x86Blocks,
                seconds: (ContinuousClock.now - start).secondsValue,
                warnings: await builder.warnings)
            await teardown(io: io, compressor: compressor)
            return (result, summary)
        } catch {
            await writer.abort()
            await teardown(io: io, compressor: compressor)
            throw error
        }
    }

    /// How each of ``withBuilder(to:options:_:)``'s two tasks ends when it does not throw.
    private enum PackTask<Result: Sendable>: Sendable {
        /// The body returned, and the builder ended the tar stream and the channel.
        case built(Result, ArchiveBuilder.Closing)
        /// The pipeline wrote every chunk the channel carried.
        case pipelineDone
    }

    /// Stops the threads. Bounded, so that a read stuck in the kernel cannot hold the caller.
    private static func teardown(io: WorkerThreadPool, compressor: CompressorPool) async {
        io.shutdown()
        compressor.shutdown()
        // Threads finish their current 32 KiB slice and exit; one stuck in a system call or a
        // hanging hook is left behind rather than holding the caller.
        _ = await compressor.awaitExit(timeout: .milliseconds(200))
        _ = await io.awaitExit(timeout: .milliseconds(50))
    }

    /// Compresses chunks as they arrive, at most `limit` in flight counting those waiting for an
    /// earlier block, and writes them in order.
    ///
    /// Each compression hands its block to the writer as soon as it is done, so a block goes out
    /// the moment it and every block before it are ready: a receiver on a pipe or a socket gets
    /// data while the pack goes on, not when the in-flight limit fills. A compression or a write
    /// that fails ends it with that error at once, even while it waits for the next chunk.
    static func runPipeline(
        chunks: AsyncChannel<Chunk>, compressor: CompressorPool, writer: ArchiveWriter,
        limit: Int, options: PackOptions, buffers: ByteArrayPool? = nil
    ) async throws {
        let onEvent = options.onEvent
        let watchdog = options.watchdog
        let hook = options.compressionHook
        try await withThrowingTaskGroup(of: PipelineStep.self) { group in
            let workers = max(1, options.workers)
            var inFlight = 0
            // Blocks done but held by the writer for an earlier one; they count against the
            // limit too, so a slow block cannot let memory grow.
            var waiting = 0
            var receiving = false
            var ended = false
            while true {
                // A free compressor first, then the chunk: one taken from the channel to wait
                // for a compressor would be a chunk of memory held for nothing, since the
                // serializer has the next one ready in the channel anyway (issue #12). The wait
                // for it is a child like the compressions: one that fails while the channel is
                // quiet ends the pipeline at once, not when the next chunk comes.
                if !receiving && !ended && (inFlight == 0 || (inFlight < workers && inFlight + waiting < limit)) {
                    group.addTask {
                        var iterator = chunks.makeAsyncIterator()
                        return .received(await iterator.next())
                    }
                    receiving = true
                }
                guard let step = try await group.next() else { break }
                switch step {
                case .received(let chunk?):
                    receiving = false
                    try Task.checkCancellation()
                    group.addTask {
                        let block = try await compressor.compress(
                            chunk.bytes, sequence: chunk.sequence, stored: chunk.stored, branch: chunk.branch,
                            watchdog: watchdog, hook: hook)
                        buffers?.recycle(chunk.bytes)
                        onEvent?(.blockCompressed(sequence: chunk.sequence, stored: block.isStored))
                        return .written(held: try await writer.accept(sequence: chunk.sequence, block: block))
                    }
                    inFlight += 1
                case .received(nil):
                    // The channel also ends when this task is cancelled: that is not the end of the data.
                    try Task.checkCancellation()
                    receiving = false
                    ended = true
                case .written(let held):
                    inFlight -= 1
                    waiting = held
                }
            }
        }
    }

    /// What a child of ``runPipeline(chunks:compressor:writer:limit:options:buffers:)`` ends with.
    private enum PipelineStep: Sendable {
        /// The next chunk from the channel, or `nil` at its end.
        case received(Chunk?)
        /// A chunk compressed and handed to the writer, which now holds `held` blocks that wait
        /// for an earlier one.
        case written(held: Int)
    }

    /// The content bytes under `sources`, for a progress total. Walks the trees once. A file with
    /// several hard links counts once, as the packer stores its content once. Give the pack's
    /// `exclusion` so that what it leaves out is not counted either.
    public static func contentSize(of sources: [PackSource], exclusion: PackExclusion = PackExclusion()) async throws -> UInt64 {
        var total: UInt64 = 0
        var linked: Set<TarSerializer.FileIdentity> = []
        var enumerator = DirectoryEnumerator(sources: sources, unreadable: .warn)
        enumerator.exclusion = exclusion
        for try await batch in enumerator {
            for entry in batch.entries {
                if entry.kind == .regular, entry.linkCount > 1, !linked.insert(.init(device: entry.device, inode: entry.inode)).inserted {
                    continue
                }
                total += entry.size
            }
        }
        return total
    }
}
