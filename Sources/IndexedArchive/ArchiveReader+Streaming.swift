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
        let expected = index?.entries
        let members = try await run {
            var consumer = TarConsumer(expected: expected)
            consumer.onProgress = onProgress
            return consumer
        }.members
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
        var failures: [ArchiveError] = []
        var failedMembers = 0
        var warningCount = 0
    }

    /// Extracts members (all, or `options.members`) under `directory`, safely: see ``ExtractOptions``.
    /// A member cut short by damage is removed, never left half-written.
    @discardableResult
    public func extract(to directory: String, options: ExtractOptions = ExtractOptions()) async throws -> ExtractSummary {
        let (tracked, unmatched) = options.trackingSelection()
        var summary = try await extractTracked(to: directory, options: tracked)
        summary.unmatchedMembers = unmatched()
        return summary
    }

    /// ``extract(to:options:)``, with the selection's matches being recorded.
    private func extractTracked(to directory: String, options: ExtractOptions) async throws -> ExtractSummary {
        let start = ContinuousClock.now
        if let index {
            let count = memberCount ?? index.entries.count
            guard count <= options.maxEntries else {
                throw ArchiveError(.limitExceeded, "archive lists \(count) members, over the limit of \(options.maxEntries)", path: path)
            }
        }
        // A reader opened for a selection extracts that selection by random access; anything
        // else needs the whole index.
        if let selection, options.memberFilter != selection {
            return try await whole().extract(to: directory, options: options)
        }
        // A selected hard link whose target the selection's index left out: the whole index
        // finds the target, whose content is then written under the link's name.
        if selection != nil, let index, index.entries.contains(where: { $0.kind == .hardLink }) {
            let names = Set(index.entries.map { ExactName($0.name) })
            if index.entries.contains(where: {
                $0.kind == .hardLink && !names.contains(ExactName($0.linkTarget.map(ArchiveEntry.name(of:)) ?? ""))
            }) {
                return try await whole().extract(to: directory, options: options)
            }
        }
        // Computed with the selection below and kept for the whole stream, should it come to that.
        var standIns = HardLinkStandIns()
        if let index, let blocks, let members = options.memberFilter {
            // Matching millions of paths against the selection takes long enough to hold up the
            // cooperative pool: it runs on a decode thread.
            let selected: [ArchiveEntry]
            let bytes: UInt64
            (selected, bytes, standIns) = try await blocks.pool.run { _ in
                var selected = index.entries.filter { TarConsumer.selected($0.path, by: members) }
                var standIns = HardLinkStandIns()
                if selected.contains(where: { $0.kind == .hardLink }) {
                    standIns = HardLinkStandIns(entries: index.entries) { TarConsumer.selected($0.path, by: members) }
                    selected = index.entries.filter {
                        standIns.extracts(at: $0.headerOffset, selected: TarConsumer.selected($0.path, by: members))
                    }
                }
                // A small selection is read by random access; a large one streams the whole archive
                // once. The sizes come from the index: summed without trapping, however large they
                // claim to be.
                let bytes = selected.reduce(UInt64(0)) { sum, entry in
                    let (next, overflow) = sum.addingReportingOverflow(entry.size)
                    return overflow ? .max : next
                }
                return (selected, bytes, standIns)
            }
            if bytes < index.tarSize / 4 {
                let result = try await SelectiveExtraction.run(
                    selected, standIns: standIns, blocks: blocks, path: path,
                    span: { entry throws(ArchiveError) in try span(of: entry, fileIndex: blocks.fileIndex) },
                    to: directory, options: options)
                return ExtractSummary(
                    entries: result.extracted, bytes: result.bytes, warnings: result.warnings,
                    seconds: (ContinuousClock.now - start).secondsValue, failures: result.failures,
                    failedMembers: result.failedMembers, warningCount: result.warningCount)
            }
        }
        // Too much for random access: the whole stream, held to the whole index.
        if selection != nil { return try await whole().extract(to: directory, options: options) }
        let expected = index?.entries
        let result = try await run(
            { TarConsumer(expected: expected) }, parallelism: options.parallelism, extractTo: (directory, options, standIns))
        // Every member is written and sound; the archive is damaged all the same.
        if let pixzIndexDamage { throw pixzIndexDamage }
        return ExtractSummary(
            entries: result.extracted, bytes: result.bytes, warnings: result.warnings,
            seconds: (ContinuousClock.now - start).secondsValue, failures: result.failures,
            failedMembers: result.failedMembers, warningCount: result.warningCount)
    }

    /// Feeds the whole tar stream through the consumer `make` gives: blocks decoded in parallel and
    /// consumed in order (any file whose xz Index lists them), or one sequential decoder
    /// (otherwise). Returns the members seen. On failure a file being extracted is removed.
    ///
    /// With `extractTo`, the consumer's extractor is made on the I/O thread (it creates and opens
    /// the destination).
    private func run(
        _ make: @escaping @Sendable () -> TarConsumer, parallelism: Int = PackOptions.activeCores,
        extractTo: (directory: String, options: ExtractOptions, standIns: HardLinkStandIns)? = nil
    ) async throws -> RunResult {
        let archiveSize = file.size
        // What the blocks decode to, when the xz Index could be read.
        let tarStreamSize = blocks.map { index?.tarSize ?? $0.fileIndex.uncompressedSize }
        return try await feedTarStream(
            making: {
                var consumer = make()
                if let extractTo {
                    let extractor = try Extractor(
                        destination: extractTo.directory, options: extractTo.options, archiveSize: archiveSize)
                    extractor.tarStreamSize = tarStreamSize
                    consumer.extraction = ExtractionSink(extractor, filter: extractTo.options.memberFilter, standIns: extractTo.standIns)
                }
                return consumer
            },
            parallelism: parallelism, watchdog: extractTo?.options.watchdog, name: "amk-extract"
        ) { consumer in
            try consumer.finish()
            let extractor = consumer.extractor
            return RunResult(
                members: consumer.members, extracted: extractor?.entries ?? 0,
                bytes: extractor?.bytes ?? 0, warnings: extractor?.warnings ?? [], failures: extractor?.failures ?? [],
                failedMembers: extractor?.failedMembers ?? 0, warningCount: extractor?.warningCount ?? 0)
        }
    }

    /// Feeds the whole tar stream into the consumer `make` gives, which lives in one job on an I/O
    /// thread of its own (``ConsumerJob``), and returns what `finish` makes of it: the data blocks
    /// decoded in parallel when the xz Index lists them (ours, or another writer's: `xz -T`, pixz;
    /// a foreign archive's every block is tar stream), one streaming decoder otherwise. On failure
    /// the member being extracted is removed, and the tar parser's errors name it.
    private func feedTarStream<R: Sendable>(
        making make: @escaping @Sendable () throws -> TarConsumer, parallelism: Int, watchdog: Watchdog?,
        name: String, finish: @escaping @Sendable (inout TarConsumer) throws -> R
    ) async throws -> R {
        guard let blocks, dataBlockCount > 0 else {
            return try await scanSequentially(name: name, making: make, finish: finish)
        }
        let io = WorkerThreadPool(threads: 1, name: name)
        defer { io.shutdown() }
        let path = self.path
        let range = 0...(dataBlockCount - 1)
        let tarSize = index?.tarSize ?? blocks.fileIndex.uncompressedSize
        return try await ConsumerJob.run(
            on: io, making: make,
            consume: { consumer, piece in
                let job = watchdog?.begin(.write, job: "extracting tar bytes at \(piece.offset)")
                defer { if let job { watchdog?.end(job) } }
                try piece.withBytes { try consumer.consume($0, verifiedThrough: piece.verifiedEnd) }
            },
            finish: finish, abandon: { consumer, error in Self.abandoned(&consumer, error, path: path) }
        ) { handOff in
            try await blocks.decode(range, to: tarSize, parallelism: parallelism, watchdog: watchdog) { piece in
                try await handOff.send(piece)
            }
        }
    }

    /// Reads the archive from its start through one streaming decoder (``SequentialScanner``) into
    /// the consumer `make` gives, in one job on a thread of its own, until the end or until `until`
    /// says the consumer has what it wanted, and returns what `finish` makes of it. On failure the
    /// member being extracted is removed, and the tar parser's errors name it.
    func scanSequentially<R: Sendable>(
        name: String, making make: @escaping @Sendable () throws -> TarConsumer,
        until: (@Sendable (TarConsumer) -> Bool)? = nil, finish: @escaping @Sendable (inout TarConsumer) throws -> R
    ) async throws -> R {
        let io = WorkerThreadPool(threads: 1, name: name)
        defer { io.shutdown() }
        let (file, memory, path) = (self.file, maxDecoderMemory, self.path)
        return try await io.run { flag in
            var consumer = try make()
            do {
                try SequentialScanner.decode(file, maxDecoderMemory: memory, into: &consumer, flag: flag, until: until)
                return try finish(&consumer)
            } catch {
                throw Self.abandoned(&consumer, error, path: path)
            }
        }
    }

    /// What a reading that failed throws, after removing the member `consumer` was extracting:
    /// the tar parser's errors as the ``ArchiveError`` this reader promises (`.corrupt`, naming the
    /// member the stream stopped in, if any); other errors unchanged.
    static func abandoned(_ consumer: inout TarConsumer, _ error: any Error, path: String?) -> any Error {
        consumer.extractor?.abandonCurrent(after: error)
        guard let tar = error as? TarError else { return error }
        return ArchiveError.fromTar(tar, path: path, member: consumer.unfinishedMember)
    }

    // MARK: - Foreign archives

    struct ScanResult: Sendable {
        var collected: [ArchiveEntry]?
        var metadata: [String: String]
    }

    func scan(collect: Bool, stopAfterFirstMember: Bool = false) async throws -> ScanResult {
        let make: @Sendable () -> TarConsumer = { TarConsumer(listing: collect ? MemberListing() : nil) }
        guard stopAfterFirstMember else {
            return try await feedTarStream(
                making: make, parallelism: PackOptions.activeCores, watchdog: nil, name: "amk-scan"
            ) { consumer in
                try consumer.finish()
                return ScanResult(collected: consumer.collected, metadata: consumer.metadata)
            }
        }
        return try await scanSequentially(name: "amk-scan", making: make, until: { $0.members > 0 }) { consumer in
            ScanResult(collected: consumer.collected, metadata: consumer.metadata)
        }
    }
}
