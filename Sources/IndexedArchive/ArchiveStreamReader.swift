import Foundation
import Tar
import XZ

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Extracts an archive as it arrives on a pipe or a socket, without ever seeking.
///
/// Each xz block's check is verified at the block's end, after its bytes have reached the tar
/// parser; the extractor writes members as they complete, and keeps them only once the block
/// they came from has passed (``XZ/StreamDecoder/verifiedOutput``). When our rich index arrives
/// at the end, every member extracted is checked against it (path, kind, size, offsets, content
/// CRC64). A stream that breaks off, or a block whose check fails, is an error: the member it
/// cut and those made from unverified bytes are removed; the caller decides what to do with the
/// rest (the migration host discards its whole staging folder).
public enum ArchiveStreamReader {
    /// What a streamed extraction found.
    public struct Result: Sendable {
        /// The members the stream held, in order, when the reading kept them: a scan that was
        /// asked to (`keepingEntries`). An extraction keeps none, so that its memory does not grow
        /// with the number of members: see ``members``.
        public var entries: [ArchiveEntry]
        /// How many members the stream held.
        public var members: Int = 0
        /// Content bytes written.
        public var bytes: UInt64
        /// Metadata from the archive's pax global header.
        public var metadata: [String: String]
        /// Whether our index arrived and every member matched it.
        public var indexVerified: Bool
        /// Whether a stream of the archive carries no integrity check (xz check type None, which
        /// `xz --check=none` writes): its content was read as it decoded, and nothing could say
        /// whether it is what was packed.
        public var isUnchecked = false
        /// Wall-clock time of the extraction.
        public var seconds: Double
        /// Members written (the others were not selected, or were skipped with a warning).
        public var extracted: Int = 0
        /// What extraction could not do exactly: the first ``ExtractSummary/keptWarnings``.
        public var warnings: [ExtractWarning] = []
        /// How many warnings there were.
        public var warningCount = 0
        /// Members not extracted (``ExtractOptions/continuesAfterMemberFailures``), the first
        /// ``ExtractSummary/keptFailures`` of them.
        public var failures: [ArchiveError] = []
        /// How many members were not extracted.
        public var failedMembers = 0
        /// As ``ExtractSummary/unmatchedMembers``: the names of the selection that selected no
        /// member (empty without one, or when only scanning).
        public var unmatchedMembers: [String] = []
    }

    /// Reads `fd` to its end and extracts under `directory`. `fd` is not closed.
    ///
    /// Memory stays bounded whatever the stream declares: blocks are decoded and consumed a slice
    /// at a time, never held whole, and what follows the tar stream (our index blocks) is kept
    /// only up to `maxIndexBytes`, or when that is nil, up to twice
    /// ``ArchiveReader/indexAllowance(fileSize:)`` for the compressed bytes received so far (the
    /// rich index and the pixz index both come there). Nothing is kept for each member but for the
    /// first 65,536 (24 bytes each), what the index is checked against (see ``Result/entries``).
    public static func extract(
        from fd: Int32, to directory: String, options: ExtractOptions = ExtractOptions(),
        maxIndexBytes: Int? = nil
    ) async throws -> Result {
        let (tracked, unmatched) = options.trackingSelection()
        var result = try await read(
            from: fd, extractingTo: directory, options: tracked, maxIndexBytes: maxIndexBytes, keepingEntries: false)
        result.unmatchedMembers = unmatched()
        return result
    }

    /// Reads `fd` to its end without writing anything: lists the members (with their content
    /// checksums), checks every block's check and, when our index arrives at the end, every member
    /// against it. `amk list -` and `amk verify -` on a pipe. `fd` is not closed.
    /// `onProgress` is called with the decompressed bytes read so far. With `keepingEntries`
    /// false, ``Result/entries`` stays empty (a verification needs only the count, a listing can
    /// take each member from `onMember`), and the memory used does not grow with the number of
    /// members. `onMember` is called with each member once its content has been read, on the
    /// reading's thread, one at a time; what it throws ends the reading.
    public static func scan(
        from fd: Int32, maxIndexBytes: Int? = nil, keepingEntries: Bool = true,
        onProgress: (@Sendable (UInt64) -> Void)? = nil, onMember: (@Sendable (ArchiveEntry) throws -> Void)? = nil
    ) async throws -> Result {
        try await read(
            from: fd, extractingTo: nil, options: ExtractOptions(), maxIndexBytes: maxIndexBytes, keepingEntries: keepingEntries,
            onProgress: onProgress, onMember: onMember)
    }

    static func read(
        from fd: Int32, extractingTo directory: String?, options: ExtractOptions,
        maxIndexBytes: Int?, keepingEntries: Bool, onProgress: (@Sendable (UInt64) -> Void)? = nil,
        onMember: (@Sendable (ArchiveEntry) throws -> Void)? = nil
    ) async throws -> Result {
        let start = ContinuousClock.now
        // A stream's size is unknown: without a limit of the caller's, the free space of the
        // destination bounds what a decompression bomb can write. Content sent to a descriptor
        // fills no disk: the ratio to the bytes read so far bounds it (Extractor.streamed).
        var options = options
        if let directory, options.maxBytes == nil, options.contentOutput == nil {
            options.maxBytes = freeSpace(at: directory)
            options.byteLimitReason = "the free space at the destination"
            options.countsFreeSpace = true
        }
        let chosen = options
        let filter = options.memberFilter
        // The pipe is read on one thread while the other decodes, checks and writes.
        let io = WorkerThreadPool(threads: 2, name: "amk-stream")
        defer { io.shutdown() }
        // The next 1 MiB is read while one is decoded and written (the reads used to wait for
        // each piece's writing), and no more: a slow pipe is not buffered without end.
        return try await ConsumerJob.run(
            on: io, capacity: 2,
            making: {
                var extraction: ExtractionSink?
                if let directory {
                    let extractor = try Extractor(destination: directory, options: chosen, archiveSize: 0)
                    extraction = ExtractionSink(extractor, filter: filter)
                }
                var consumer = TarConsumer(
                    listing: MemberListing(checksums: true, keepsEntries: keepingEntries, onMember: onMember),
                    extraction: extraction)
                consumer.onProgress = onProgress
                consumer.trailing = TrailingBytes(limit: maxIndexBytes ?? trailingAllowance(received: 0))
                // A hostile header asking for a 1.5 GiB dictionary would cost that much once the
                // output passes it: the decoder is held to what `xz -9` needs, with room to spare.
                // The blocks of a multi-block stream (ours, `xz -T`, pixz) decode on every active
                // core, within the same memory limit taken together.
                // Under an address-space limit, within what it leaves (see AddressSpace).
                let decoder = StreamDecoder(
                    memoryLimit: UInt64(ArchiveReader.Limits.decoderMemory(within: AddressSpace.available)),
                    threads: chosen.parallelism)
                return Decoding(consumer: consumer, decoder: decoder)
            },
            consume: { (state: inout Decoding, piece: [UInt8]) in
                let received = state.decoder.totalIn + UInt64(piece.count)
                if maxIndexBytes == nil {
                    state.consumer.trailing?.limit = trailingAllowance(received: received)
                }
                state.consumer.extractor?.streamed(compressedBytes: received)
                try feed(piece, into: &state)
            },
            finish: { state in
                do {
                    try state.decoder.finish { try state.consumer.consume($0, verifiedThrough: state.decoder.verifiedOutput) }
                } catch let error as XZError where error.code == .format {
                    // Not xz at all (a `.tar.gz` piped in, told at the end of a short one): named
                    // for what it is, as from a file, not called damaged.
                    throw ArchiveError(.notAnArchive, error.message, offset: error.offset, underlying: error)
                } catch let error as XZError {
                    throw ArchiveError(
                        .corrupt, "stream ended early or is damaged: \(error.message)", offset: error.offset, underlying: error)
                }
                try state.consumer.finish()
                let index = try verifiedIndex(state.consumer, archiveSize: state.decoder.totalIn)
                // The tar headers have whole seconds; the index that followed them has the rest.
                if index != nil, let extractor = state.consumer.extractor, let bytes = state.consumer.trailing?.bytes {
                    try restoreTimes(from: bytes, archiveSize: state.decoder.totalIn, by: extractor, selectedBy: filter)
                }
                var result = Result(
                    entries: state.consumer.collected ?? [], members: state.consumer.listing?.count ?? 0,
                    bytes: state.consumer.extractor?.bytes ?? 0,
                    metadata: state.consumer.metadata, indexVerified: index != nil,
                    seconds: (ContinuousClock.now - start).secondsValue,
                    extracted: state.consumer.extractor?.entries ?? 0,
                    warnings: state.consumer.extractor?.warnings ?? [],
                    failures: state.consumer.extractor?.failures ?? [],
                    failedMembers: state.consumer.extractor?.failedMembers ?? 0)
                result.isUnchecked = state.decoder.sawUncheckedStream
                result.warningCount = state.consumer.extractor?.warningCount ?? 0
                return result
            },
            abandon: { state, error in ArchiveReader.abandoned(&state.consumer, error, path: nil) }
        ) { handOff in
            while true {
                // A read on a pipe or socket can block for good: it shares nothing, so it may be
                // abandoned when the caller is cancelled.
                let piece = try await io.run(abandonOnCancel: true) { _ in try readSome(fd, max: 1 << 20) }
                if piece.isEmpty { break }
                try await handOff.send(piece)
            }
        }
    }

    /// A streamed reading's state, kept by its job (``ConsumerJob``): the tar consumer and the
    /// decoder in front of it.
    struct Decoding {
        var consumer: TarConsumer
        let decoder: StreamDecoder
    }

    private static func feed(_ piece: [UInt8], into state: inout Decoding) throws {
        do {
            try piece.withUnsafeBytes { raw in
                try state.decoder.feed(raw) { try state.consumer.consume($0, verifiedThrough: state.decoder.verifiedOutput) }
            }
        } catch let error as XZError {
            throw ArchiveError(
                error.code == .memoryLimit ? .limitExceeded : error.code == .format && error.offset == 0 ? .notAnArchive : .corrupt,
                AddressSpace.explained(error), offset: error.offset, underlying: error)
        }
    }

    /// Sets the times of the members `filter` selects to those of the checked index in `bytes`,
    /// a batch of members at a time: the entries are decoded again rather than kept.
    private static func restoreTimes(
        from bytes: [UInt8], archiveSize: UInt64, by extractor: Extractor, selectedBy filter: MemberFilter?
    ) throws {
        var batch: [ArchiveEntry] = []
        _ = try ArchiveIndex.decode(bytes, archiveSize: archiveSize, keeping: { _ in false }) { entry throws(ArchiveError) in
            guard entry.mtime.nanoseconds != 0, TarConsumer.selected(entry.path, by: filter) else { return }
            batch.append(entry)
            if batch.count == timeBatch {
                extractor.restoreTimes(from: batch)
                batch.removeAll(keepingCapacity: true)
            }
        }
        extractor.restoreTimes(from: batch)
    }

    /// Members whose times are set together: enough for ``Extractor/restoreTimes(from:)`` to share
    /// them between threads.
    static let timeBatch = 16_384

    /// Bytes available to an unprivileged writer on the file system that holds `path` (or its
    /// nearest existing parent).
    static func freeSpace(at path: String) -> UInt64 {
        var candidate = path
        while true {
            var info = statvfs()
            if statvfs(candidate, &info) == 0 { return UInt64(info.f_bavail) * UInt64(info.f_frsize) }
            guard let (parent, _) = PathBytes.splitAtLastSlash(candidate), !parent.isEmpty else { return 4 << 30 }
            candidate = parent
        }
    }

    /// One `read(2)`: what is available now, up to `max`; empty at end of stream.
    ///
    /// The buffer is not zeroed first: a pipe gives 64 KiB a read, and filling 1 MiB with zeros
    /// for each (touching every page of a fresh mapping) cost a tenth of a streamed extraction's
    /// CPU time. Only the bytes `read` wrote are ever part of the array.
    static func readSome(_ fd: Int32, max: Int) throws -> [UInt8] {
        var failure: Int32?
        let buffer = [UInt8](unsafeUninitializedCapacity: max) { raw, count in
            let got = SystemCall.retrying { Platform.read(fd, raw.baseAddress!, max) }
            if got < 0 { failure = errno }
            count = Swift.max(got, 0)
        }
        if let failure { throw SystemCall.error("read", path: "file descriptor \(fd)", errno: failure) }
        return buffer
    }

    /// What may follow the tar stream once `received` compressed bytes have arrived.
    static func trailingAllowance(received: UInt64) -> Int {
        let allowance = ArchiveReader.indexAllowance(fileSize: received)
        return allowance.multipliedReportingOverflow(by: 2).overflow ? .max : allowance * 2
    }

    /// Checks the members seen against the rich index that followed them, if it did, and returns
    /// it (nil if there was none), without its entries: they are decoded and checked one at a
    /// time, and never held together. The index is held to the limits of an archive file of
    /// `archiveSize` bytes (the compressed stream's).
    static func verifiedIndex(_ consumer: TarConsumer, archiveSize: UInt64) throws -> ArchiveIndex? {
        let trailing = consumer.trailing?.bytes ?? []
        guard ArchiveIndex.hasMagic(trailing) else { return nil }
        // Behind bytes tar ignores after its end marker, the magic may be any such bytes (a
        // GNU tar archive with "AMKINDEX" in what follows it): only an index whose header holds
        // up is taken for one there, and held to the stream; directly after the end marker and
        // its zero blocks, where amk writes it, the index is checked whatever it holds.
        if consumer.trailing?.followsOtherBytes == true,
            (try? ArchiveIndex.header(trailing, maxEntries: .max, archiveSize: nil, blockOffset: nil)) == nil
        {
            return nil
        }
        guard let listing = consumer.listing else { return try ArchiveIndex.decode(trailing, archiveSize: archiveSize) }
        if let sparse = listing.firstSparse {
            _ = try ArchiveIndex.decode(trailing, archiveSize: archiveSize, keeping: { _ in false })
            throw IndexConformance.sparse(sparse)
        }
        // What a file's reading holds each header to (IndexConformance), mode and time included:
        // `amk list -l` shows the index's, which must be what extraction makes.
        var checker = MemberFingerprints.Checker(listing.fingerprints)
        let (index, _) = try ArchiveIndex.decode(trailing, archiveSize: archiveSize, keeping: { _ in false }) {
            entry throws(ArchiveError) in
            try checker.visit(entry)
        }
        try checker.finish()
        // The index follows the tar stream, zero blocks after its end marker included.
        let indexStart = consumer.trailing?.indexStart ?? (consumer.endOffset ?? 0) + UInt64(TarEncoder.endOfArchive.count)
        guard index.tarSize == indexStart else {
            throw ArchiveError(.corrupt, "the index's tar size \(index.tarSize) does not match the stream")
        }
        return index
    }
}
