import Foundation
import Tar
import XZ

// Readings of the whole tar stream, in order (verify, full extraction, listing a foreign archive),
// and the selective extraction that random access serves instead when the selection is small.
extension ArchiveReader {
    /// Decodes every block (checking each block's CRC64), parses the tar stream, and checks that
    /// every member matches its index entry and its content checksum. Throws at the first problem.
    /// Returns the number of members checked. `onProgress` is called with the bytes of the tar
    /// stream checked so far, from a decoding thread (a progress bar).
    @discardableResult
    public func verify(onProgress: (@Sendable (UInt64) -> Void)? = nil) async throws -> Int {
        // Every member is held to the index: a reader opened for a selection needs all of it.
        if selection != nil { return try await whole().verify(onProgress: onProgress) }
        var consumer = TarConsumer(expected: index?.entries)
        consumer.onProgress = onProgress
        let members = try await run(consumer).members
        // The index blocks too: opening only decoded the first bytes of the pixz index, and a
        // partly decoded block's check is never verified.
        if index != nil, let blocks, dataBlockCount < blocks.fileIndex.blocks.count {
            try await blocks.decode(dataBlockCount...(blocks.fileIndex.blocks.count - 1), to: .max, parallelism: 1) { _ in }
        }
        return members
    }

    struct RunResult: Sendable {
        var members: Int
        var extracted: Int
        var bytes: UInt64
        var warnings: [ExtractWarning]
    }

    /// Extracts members (all, or `options.members`) under `directory`, safely: see ``ExtractOptions``.
    /// A member cut short by damage is removed, never left half-written.
    @discardableResult
    public func extract(to directory: String, options: ExtractOptions = ExtractOptions()) async throws -> ExtractSummary {
        let start = ContinuousClock.now
        if let index {
            let count = memberCount ?? index.entries.count
            guard count <= options.maxEntries else {
                throw ArchiveError(.limitExceeded, "archive lists \(count) members, over the limit of \(options.maxEntries)", path: path)
            }
        }
        // A reader opened for a selection extracts that selection by random access; anything
        // else needs the whole index.
        if let selection, options.members != selection {
            return try await whole().extract(to: directory, options: options)
        }
        if let index, let blocks, let members = options.members {
            // Matching millions of paths against the selection takes long enough to hold up the
            // cooperative pool: it runs on a decode thread.
            let (selected, bytes) = try await blocks.pool.run { _ in
                let selected = index.entries.filter { TarConsumer.selected($0.path, by: members) }
                // A small selection is read by random access; a large one streams the whole archive
                // once. The sizes come from the index: summed without trapping, however large they
                // claim to be.
                let bytes = selected.reduce(UInt64(0)) { sum, entry in
                    let (next, overflow) = sum.addingReportingOverflow(entry.size)
                    return overflow ? .max : next
                }
                return (selected, bytes)
            }
            if bytes < index.tarSize / 4 {
                let result = try await SelectiveExtraction.run(
                    selected, blocks: blocks, path: path,
                    span: { entry throws(ArchiveError) in try span(of: entry, fileIndex: blocks.fileIndex) },
                    to: directory, options: options)
                return ExtractSummary(
                    entries: result.extracted, bytes: result.bytes, warnings: result.warnings,
                    seconds: (ContinuousClock.now - start).secondsValue)
            }
        }
        // Too much for random access: the whole stream, held to the whole index.
        if selection != nil { return try await whole().extract(to: directory, options: options) }
        let result = try await run(
            TarConsumer(expected: index?.entries), parallelism: options.parallelism,
            extractTo: (directory, options))
        return ExtractSummary(
            entries: result.extracted, bytes: result.bytes, warnings: result.warnings,
            seconds: (ContinuousClock.now - start).secondsValue)
    }

    /// Feeds the whole tar stream through `consumer`: blocks decoded in parallel and consumed in
    /// order (any file whose xz Index lists them), or one sequential decoder (otherwise). Returns the members seen. On failure
    /// a file being extracted is removed.
    ///
    /// With `extractTo`, the consumer's extractor is made on the I/O thread (it creates and opens
    /// the destination).
    private func run(
        _ consumer: sending TarConsumer, parallelism: Int = PackOptions.activeCores,
        extractTo: (directory: String, options: ExtractOptions)? = nil
    ) async throws -> RunResult {
        let box = ConsumerBox(consumer)
        let io = WorkerThreadPool(threads: 1, name: "amk-extract")
        defer { io.shutdown() }
        do {
            if let extractTo {
                let archiveSize = file.size
                try await io.run { _ in
                    try box.state.withLock { state in
                        let extractor = try Extractor(
                            destination: extractTo.directory, options: extractTo.options,
                            archiveSize: archiveSize)
                        state.consumer.extraction = ExtractionSink(extractor, filter: extractTo.options.members)
                    }
                }
            }
            try await feedTarStream(into: box, on: io, parallelism: parallelism, watchdog: extractTo?.options.watchdog)
            return try await io.run { _ in
                try box.state.withLock { state in
                    try state.consumer.finish()
                    let extractor = state.consumer.extractor
                    return RunResult(
                        members: state.consumer.members, extracted: extractor?.entries ?? 0,
                        bytes: extractor?.bytes ?? 0, warnings: extractor?.warnings ?? [])
                }
            }
        } catch {
            await io.runRegardless { box.state.withLock { $0.consumer.extractor?.abandonCurrent() } }
            throw typed(error, box: box)
        }
    }

    /// Feeds the whole tar stream into `box`, each piece on `io`: the data blocks decoded in
    /// parallel when the xz Index lists them (ours, or another writer's: `xz -T`, pixz; a foreign
    /// archive's every block is tar stream), one streaming decoder otherwise.
    private func feedTarStream(into box: ConsumerBox, on io: WorkerThreadPool, parallelism: Int, watchdog: Watchdog?) async throws {
        guard let blocks, dataBlockCount > 0 else {
            try await SequentialScanner.decode(file, maxDecoderMemory: maxDecoderMemory, into: box, on: io)
            return
        }
        try await blocks.decode(
            0...(dataBlockCount - 1), to: index?.tarSize ?? blocks.fileIndex.uncompressedSize, parallelism: parallelism,
            watchdog: watchdog
        ) { piece in
            try await io.run { _ in
                let job = watchdog?.begin(.write, job: "extracting tar bytes at \(piece.offset)")
                defer { if let job { watchdog?.end(job) } }
                try box.state.withLock { state in try piece.withBytes { try state.consumer.consume($0) } }
            }
        }
    }

    /// The tar parser's errors as the ``ArchiveError`` this reader promises (`.corrupt`, naming the
    /// member the stream stopped in, if any); other errors unchanged.
    func typed(_ error: any Error, box: ConsumerBox) -> any Error {
        guard let tar = error as? TarError else { return error }
        let member = box.state.withLock { $0.consumer.unfinishedMember }
        return ArchiveError.fromTar(tar, path: path, member: member)
    }

    // MARK: - Foreign archives

    struct ScanResult {
        var collected: [ArchiveEntry]?
        var metadata: [String: String]
    }

    func scan(collect: Bool, stopAfterFirstMember: Bool = false) async throws -> ScanResult {
        let box = ConsumerBox(TarConsumer(listing: collect ? MemberListing() : nil))
        let io = WorkerThreadPool(threads: 1, name: "amk-scan")
        defer { io.shutdown() }
        do {
            if stopAfterFirstMember {
                try await SequentialScanner.decode(file, maxDecoderMemory: maxDecoderMemory, into: box, on: io, until: { $0.members > 0 })
            } else {
                try await feedTarStream(into: box, on: io, parallelism: PackOptions.activeCores, watchdog: nil)
                try await io.run { _ in try box.state.withLock { try $0.consumer.finish() } }
            }
        } catch {
            throw typed(error, box: box)
        }
        let (collected, metadata) = box.state.withLock { ($0.consumer.collected, $0.consumer.metadata) }
        return ScanResult(collected: collected, metadata: metadata)
    }
}
