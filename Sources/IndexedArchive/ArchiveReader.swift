import Foundation
import Synchronization
import Tar
import XZ

/// Reads an archive: lists it, reads single members, verifies and extracts it.
///
/// An archive written by this package is opened from its end: the xz footer, the xz Index (every
/// block's place) and the rich index block. Listing then decompresses no data, and reading a member
/// decodes only the blocks it spans, stopping as soon as its bytes are out. Any other `.tar.xz`
/// (`tar -cJf`, `xz -T2`, pixz; one or several streams) is read from the start by the same API:
/// its blocks, which its xz Index lists, decode in parallel for a listing, a verification or an
/// extraction; one whose xz Index cannot be read goes through one streaming decoder.
///
/// Every failure is an ``ArchiveError`` naming the member or offset; damaged input never crashes.
///
/// Nothing the file declares is trusted with memory: the rich index is held to limits proportional
/// to the file before it is decoded, and blocks are decoded in pieces. Blocks up to
/// `maxBufferedBlockSize` are decoded ahead in parallel, at most `parallelism + 1` at a time; a
/// larger block (which this package never writes with its default chunk size) is decoded in
/// slices of 1 MiB handed on as they come. Peak memory for reading is therefore about
/// `(parallelism + 1) * maxBufferedBlockSize` whatever the archive says, and a few MiB for a
/// block of any size.
public final class ArchiveReader: Sendable {
    /// How the archive is read.
    public enum Mode: Sendable, Equatable {
        /// With our index: random access.
        case indexed
        /// Without it: decompressed from the start (the blocks in parallel when the file's xz Index
        /// lists them).
        case sequential
    }

    /// The archive file.
    public let path: String
    /// Whether members are read at random (our index) or by decompressing from the start.
    public let mode: Mode
    let file: ArchiveFile
    let fileIndex: XZFileIndex?
    /// Why the xz Index could not be read, when it could not.
    let fileIndexProblem: String?
    let index: ArchiveIndex?
    let hasPixzIndex: Bool
    /// Data blocks: those before the index blocks.
    let dataBlockCount: Int
    /// The file's blocks, decoded for every reading; nil when the xz Index cannot be read.
    let blocks: BlockScheduler?
    /// The most memory one decoder may use (mostly the LZMA2 dictionary).
    let maxDecoderMemory: UInt64

    /// Largest rich index block accepted.
    public static let defaultMaxIndexBytes = 1 << 30
    /// Members accepted in an index unless the caller says otherwise.
    public static let defaultMaxEntries = 10_000_000
    /// Largest block decoded whole (ahead, in parallel): four default chunks.
    public static let defaultMaxBufferedBlockSize = 64 << 20
    /// Memory allowed to one block decoder: twice what `xz -9` (a 64 MiB dictionary) needs. The
    /// decoder touches its whole dictionary once a block's output exceeds it, so a hostile header
    /// asking for 1.5 GiB would otherwise cost that much for a small file.
    public static let defaultMaxDecoderMemory = 128 << 20
    /// The rich index a file may hold, unless the caller sets `maxIndexBytes`: 256 bytes per
    /// byte of file, at least 16 MiB, at most ``defaultMaxIndexBytes``. Measured with `amk pack`,
    /// the decoded index is 12 times the file for 10,000 empty files, 37 times with 250-byte
    /// paths and 183 times for 2,000 empty files under 2,900-byte paths, the worst case found.
    public static func indexAllowance(fileSize: UInt64) -> Int {
        let proportional = fileSize.multipliedReportingOverflow(by: 256)
        let wanted = proportional.overflow ? UInt64.max : max(UInt64(16 << 20), proportional.partialValue)
        return Int(min(wanted, UInt64(defaultMaxIndexBytes)))
    }

    /// Opens `path` on a thread of our own: reading the end of the file and decoding the index
    /// (seconds for millions of members) would otherwise hold one of the cooperative pool's
    /// threads, and with them the tasks that wait for one. Parameters as in ``init(path:maxIndexBytes:maxEntries:maxBufferedBlockSize:maxDecoderMemory:)``.
    public static func open(
        path: String, maxIndexBytes: Int? = nil, maxEntries: Int? = nil,
        maxBufferedBlockSize: Int = ArchiveReader.defaultMaxBufferedBlockSize,
        maxDecoderMemory: Int = ArchiveReader.defaultMaxDecoderMemory
    ) async throws -> ArchiveReader {
        let thread = WorkerThreadPool(threads: 1, name: "amk-open")
        defer { thread.shutdown() }
        return try await thread.run { _ in
            try ArchiveReader(
                path: path, maxIndexBytes: maxIndexBytes, maxEntries: maxEntries,
                maxBufferedBlockSize: maxBufferedBlockSize, maxDecoderMemory: maxDecoderMemory)
        }
    }

    /// The members' paths, in archive order: what `amk list` prints. For an archive of ours only
    /// the start of the rich index is decoded, its names, which are a small part of it; any other
    /// archive is opened and read as ``entries()`` reads it.
    ///
    /// The names are checked as ``open(path:maxIndexBytes:maxEntries:maxBufferedBlockSize:maxDecoderMemory:)``
    /// checks them, but the rest of the index is not read, nor the check at the index block's
    /// end: ``verify()`` reads everything. Parameters as for `open`.
    /// - Throws: ``ArchiveError`` as `open` and ``entries()`` do.
    public static func memberPaths(
        path: String, maxIndexBytes: Int? = nil, maxEntries: Int? = nil,
        maxBufferedBlockSize: Int = ArchiveReader.defaultMaxBufferedBlockSize,
        maxDecoderMemory: Int = ArchiveReader.defaultMaxDecoderMemory
    ) async throws -> [String] {
        try await memberPathList(
            path: path, maxIndexBytes: maxIndexBytes, maxEntries: maxEntries, maxBufferedBlockSize: maxBufferedBlockSize,
            maxDecoderMemory: maxDecoderMemory
        ).strings
    }

    /// ``memberPaths(path:maxIndexBytes:maxEntries:maxBufferedBlockSize:maxDecoderMemory:)`` as
    /// bytes, without a string per member: for `amk list`, which writes them out as they are.
    package static func memberPathList(
        path: String, maxIndexBytes: Int? = nil, maxEntries: Int? = nil,
        maxBufferedBlockSize: Int = ArchiveReader.defaultMaxBufferedBlockSize,
        maxDecoderMemory: Int = ArchiveReader.defaultMaxDecoderMemory
    ) async throws -> MemberPathList {
        let thread = WorkerThreadPool(threads: 1, name: "amk-open")
        defer { thread.shutdown() }
        // Without our index the end of the file says all a full opening would: the reader is
        // made from what was read, not by reading it again.
        let opened = try await thread.run { _ -> PathsOrReader in
            let file = try ArchiveFile(path: path)
            let layout = try ArchiveLayout.read(
                file: file, path: path, maxIndexBytes: maxIndexBytes, maxEntries: maxEntries,
                maxDecoderMemory: UInt64(clamping: maxDecoderMemory), pathsOnly: true)
            if let paths = layout.paths { return .paths(paths) }
            return .reader(
                ArchiveReader(
                    path: path, file: file, layout: layout, maxBufferedBlockSize: maxBufferedBlockSize,
                    maxDecoderMemory: maxDecoderMemory))
        }
        switch opened {
        case .paths(let paths): return paths
        case .reader(let reader): return MemberPathList(try await reader.entries().map(\.path))
        }
    }

    /// What ``memberPaths(path:maxIndexBytes:maxEntries:maxBufferedBlockSize:maxDecoderMemory:)``
    /// found at the end of the file: our index's paths, or a reader for an archive without it.
    private enum PathsOrReader: Sendable {
        case paths(MemberPathList)
        case reader(ArchiveReader)
    }

    /// Opens `path`, blocking the calling thread while it reads the end of the file and decodes
    /// the index; from async code, prefer ``open(path:maxIndexBytes:maxEntries:maxBufferedBlockSize:maxDecoderMemory:)``.
    /// - Parameters:
    ///   - path: the archive file.
    ///   - maxIndexBytes: refuse a rich index larger than this when decompressed; nil allows
    ///     ``indexAllowance(fileSize:)``.
    ///   - maxEntries: refuse an index listing more members; nil allows ``defaultMaxEntries`` and
    ///     at most one member per byte of file (see ``ArchiveIndex/minimumArchiveBytesPerEntry``).
    ///     An index can never list more members than its tar stream has room for.
    ///   - maxBufferedBlockSize: blocks decoding to more are streamed instead of decoded ahead.
    ///   - maxDecoderMemory: refuse blocks whose decoder would need more memory.
    public convenience init(
        path: String, maxIndexBytes: Int? = nil, maxEntries: Int? = nil,
        maxBufferedBlockSize: Int = ArchiveReader.defaultMaxBufferedBlockSize,
        maxDecoderMemory: Int = ArchiveReader.defaultMaxDecoderMemory
    ) throws {
        let file = try ArchiveFile(path: path)
        let layout = try ArchiveLayout.read(
            file: file, path: path, maxIndexBytes: maxIndexBytes, maxEntries: maxEntries,
            maxDecoderMemory: UInt64(clamping: maxDecoderMemory))
        self.init(path: path, file: file, layout: layout, maxBufferedBlockSize: maxBufferedBlockSize, maxDecoderMemory: maxDecoderMemory)
    }

    /// A reader of `file` (named `path`) whose end has been read into `layout`.
    private init(path: String, file: ArchiveFile, layout: ArchiveLayout, maxBufferedBlockSize: Int, maxDecoderMemory: Int) {
        self.path = path
        self.file = file
        fileIndex = layout.fileIndex
        fileIndexProblem = layout.fileIndexProblem
        index = layout.index
        hasPixzIndex = layout.hasPixzIndex
        dataBlockCount = layout.dataBlockCount
        mode = layout.index == nil ? .sequential : .indexed
        self.maxDecoderMemory = UInt64(clamping: maxDecoderMemory)
        blocks = layout.fileIndex.map {
            BlockScheduler(
                file: file, fileIndex: $0, maxBufferedBlockSize: UInt64(clamping: maxBufferedBlockSize),
                maxDecoderMemory: UInt64(clamping: maxDecoderMemory))
        }
    }

    /// Blocks whose decoding has started so far (for tests: each block is decoded once per reading).
    var blockDecodeCount: Int { blocks?.decodes.load(ordering: .relaxed) ?? 0 }

    /// The archive's metadata (exporter version, source app, writer). For a sequential archive it
    /// comes from the pax global header at the start.
    public func metadata() async throws -> [String: String] {
        if let index { return index.metadata }
        return try await scan(collect: false, stopAfterFirstMember: true).metadata
    }

    /// Every member, in archive order. Indexed archives answer from the index alone.
    public func entries() async throws -> [ArchiveEntry] {
        if let index { return index.entries }
        return try await scan(collect: true).collected ?? []
    }

    /// The member named `name` (with or without a directory's trailing `/`). When several
    /// members share the name, the last one: the one a full extraction leaves in place.
    public func entry(named name: String) async throws -> ArchiveEntry? {
        let wanted = name.hasSuffix("/") ? String(name.dropLast()) : name
        return try await entries().last { $0.name == wanted }
    }

    /// The structure of the file. Throws when the xz Index at the end cannot be read, since the
    /// structure is then unknown (``ArchiveSalvager`` can still recover what precedes the damage).
    public func info() async throws -> ArchiveInfo {
        guard fileIndex != nil else {
            throw ArchiveError(
                .corrupt, "the xz index at the end of the file cannot be read: \(fileIndexProblem ?? "unknown reason")", path: path)
        }
        return ArchiveInfo(
            streams: fileIndex?.streams.count ?? 0, blocks: fileIndex?.blocks.count ?? 0, dataBlocks: dataBlockCount,
            fileSize: file.size, uncompressedSize: fileIndex?.uncompressedSize ?? 0,
            tarSize: index?.tarSize, chunkSize: index?.chunkSize, indexedEntries: index?.entries.count,
            isIndexed: index != nil, hasPixzIndex: hasPixzIndex,
            metadata: try await metadata())
    }

    // MARK: - Reading members

    /// Writes the content of member `name` to `output` in slices, decoding only the blocks it spans
    /// (indexed) or scanning to it (sequential). In an indexed archive the tar header at the
    /// indexed offset must agree with the index, and the content checksum is verified; of several
    /// members with the name, the last one is read.
    public func read(member name: String, into output: (UnsafeRawBufferPointer) throws -> Void) async throws {
        try await read(member: name, maxSequentialBytes: 1 << 30, into: output)
    }

    private func read(member name: String, maxSequentialBytes: Int, into output: (UnsafeRawBufferPointer) throws -> Void) async throws {
        guard let index, let blocks else {
            // Without an index the member is found by decoding up to it; its bytes are kept in
            // memory (bounded) because the scan runs on another thread than `output`.
            let wanted = name.hasSuffix("/") ? String(name.dropLast()) : name
            let consumer = TarConsumer(capture: MemberCapture(wanted, limit: maxSequentialBytes))
            let box = ConsumerBox(consumer)
            let io = WorkerThreadPool(threads: 1, name: "amk-scan")
            defer { io.shutdown() }
            do {
                try await SequentialScanner.decode(
                    file, maxDecoderMemory: maxDecoderMemory, into: box, on: io, until: { $0.capture?.isDone == true })
            } catch {
                throw typed(error, box: box)
            }
            guard let bytes = box.state.withLock({ $0.consumer.capture?.isDone == true ? $0.consumer.capture?.bytes : nil }) else {
                throw ArchiveError(.memberNotFound, "no such member", path: path, member: name)
            }
            try bytes.withUnsafeBytes { try output($0) }
            return
        }
        let wanted = name.hasSuffix("/") ? String(name.dropLast()) : name
        guard let entry = index.entries.last(where: { $0.name == wanted }) else {
            throw ArchiveError(.memberNotFound, "no such member", path: path, member: name)
        }
        // Nothing to deliver: an empty file, a directory or a link has no content to read.
        guard entry.kind == .regular, entry.size > 0 else { return }
        try await readMember(entry, blocks: blocks, parallelism: PackOptions.activeCores, onHeader: { _ in }) { piece in
            try piece.withBytes { try output($0) }
        }
    }

    /// Reads an indexed member by random access: decodes the blocks holding its header blocks and
    /// content (`headerOffset ..< dataOffset + size`) and follows it with a ``MemberCursor``,
    /// which refuses the member unless the tar header at the indexed offset agrees with the index.
    /// `onHeader` then receives the header, and `deliver` the content in order. The content
    /// checksum is verified after the last piece: when this returns, every byte delivered was
    /// right; when it throws, the caller must discard what it received.
    func readMember(
        _ entry: ArchiveEntry, blocks: BlockScheduler, parallelism: Int,
        onHeader: (TarHeader) async throws -> Void,
        deliver: (DecodedPiece) async throws -> Void
    ) async throws {
        let span = try span(of: entry, fileIndex: blocks.fileIndex)
        var cursor = MemberCursor(entry, end: span.end, path: path)
        try await blocks.decode(span.blocks, from: entry.headerOffset, to: span.end, parallelism: parallelism) { piece in
            let step = try cursor.take(piece)
            if let header = step.header { try await onHeader(header) }
            if let content = step.content { try await deliver(content) }
        }
        try cursor.finish()
    }

    /// Where a member lies: the data blocks holding its header blocks and content, and the tar
    /// offset just past its content; refused when the index places it outside the data blocks.
    func span(of entry: ArchiveEntry, fileIndex: XZFileIndex) throws(ArchiveError) -> (blocks: ClosedRange<Int>, end: UInt64) {
        let start = entry.headerOffset
        let (end, overflow) = entry.dataOffset.addingReportingOverflow(entry.size)
        guard !overflow, entry.dataOffset > start, let first = fileIndex.locate(uncompressedOffset: start),
            let last = fileIndex.locate(uncompressedOffset: end - 1), last < dataBlockCount, first <= last
        else {
            throw ArchiveError(.corrupt, "member lies outside the data blocks", path: path, member: entry.path, offset: start)
        }
        return (first...last, end)
    }

    /// The content of member `name`, refusing members larger than `maxBytes`.
    public func contents(of name: String, maxBytes: Int = 1 << 30) async throws -> [UInt8] {
        if let entry = try await entry(named: name), entry.size > UInt64(clamping: maxBytes) {
            throw ArchiveError(.limitExceeded, "member is \(entry.size) bytes, over the limit of \(maxBytes)", path: path, member: name)
        }
        var out: [UInt8] = []
        try await read(member: name, maxSequentialBytes: maxBytes) { slice in
            guard slice.count <= maxBytes - out.count else {
                throw ArchiveError(.limitExceeded, "member is over the limit of \(maxBytes) bytes", member: name)
            }
            out.append(contentsOf: slice)
        }
        return out
    }

    // MARK: - Verify and extract

    /// Decodes every block (checking each block's CRC64), parses the tar stream, and checks that
    /// every member matches its index entry and its content checksum. Throws at the first problem.
    /// Returns the number of members checked. `onProgress` is called with the bytes of the tar
    /// stream checked so far, from a decoding thread (a progress bar).
    @discardableResult
    public func verify(onProgress: (@Sendable (UInt64) -> Void)? = nil) async throws -> Int {
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
        if let index, index.entries.count > options.maxEntries {
            throw ArchiveError(
                .limitExceeded, "archive lists \(index.entries.count) members, over the limit of \(options.maxEntries)", path: path)
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
    private func typed(_ error: any Error, box: ConsumerBox) -> any Error {
        guard let tar = error as? TarError else { return error }
        let member = box.state.withLock { $0.consumer.unfinishedMember }
        return ArchiveError.fromTar(tar, path: path, member: member)
    }

    // MARK: - Foreign archives

    struct ScanResult {
        var collected: [ArchiveEntry]?
        var metadata: [String: String]
    }

    private func scan(collect: Bool, stopAfterFirstMember: Bool = false) async throws -> ScanResult {
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
