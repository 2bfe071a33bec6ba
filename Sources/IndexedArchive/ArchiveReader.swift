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
    /// Blocks that decode to at most this many bytes are decoded whole, ahead, in parallel;
    /// larger ones are streamed.
    let maxBufferedBlockSize: UInt64
    /// The most memory one block decoder may use (mostly the LZMA2 dictionary).
    let maxDecoderMemory: UInt64
    /// The threads that decode blocks, started on first use and kept for the reader's life:
    /// starting threads for every member read cost more than decoding a small block.
    private let decodeThreads = Mutex<WorkerThreadPool?>(nil)
    /// Blocks whose decoding has started, from their first byte (for tests: reading members
    /// that share a block must decode it once).
    let blockDecodes = Atomic<Int>(0)

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
    public init(
        path: String, maxIndexBytes: Int? = nil, maxEntries: Int? = nil,
        maxBufferedBlockSize: Int = ArchiveReader.defaultMaxBufferedBlockSize,
        maxDecoderMemory: Int = ArchiveReader.defaultMaxDecoderMemory
    ) throws {
        self.path = path
        let file = try ArchiveFile(path: path)
        self.file = file
        self.maxBufferedBlockSize = UInt64(clamping: maxBufferedBlockSize)
        let decoderMemory = UInt64(clamping: maxDecoderMemory)
        self.maxDecoderMemory = decoderMemory
        var fileIndex: XZFileIndex?
        var problem: String?
        do {
            fileIndex = try XZFileIndex.read(fileSize: file.size) { offset, count in try file.read(at: offset, count: count) }
        } catch let error as XZError {
            // No usable xz Index (damaged end, or not xz at all): the sequential reader will say
            // what is wrong when the archive is read.
            fileIndex = nil
            problem = error.description
        }
        self.fileIndex = fileIndex
        self.fileIndexProblem = problem
        var index: ArchiveIndex?
        var pixz = false
        var dataBlocks = fileIndex?.blocks.count ?? 0
        if let fileIndex, fileIndex.streams.count == 1, fileIndex.blocks.count >= 3 {
            let blocks = fileIndex.blocks
            let last = blocks[blocks.count - 1]
            let rich = blocks[blocks.count - 2]
            let check = fileIndex.check(ofBlock: blocks.count - 1)
            func decode(_ record: XZIndexRecord, first count: UInt64?) throws -> [UInt8] {
                try ArchiveReader.decode(file: file, record: record, check: check, first: count, maxDecoderMemory: decoderMemory)
            }
            // A small pixz index is decoded whole, so that damage to it is found at once; a
            // large one only as far as its magic (verify reads it all).
            let smallBlock = UInt64(BlockStream.inputPiece / 4)
            if PixzIndex.hasMagic(try decode(last, first: last.uncompressedSize <= smallBlock ? nil : 8)) {
                pixz = true
                let richHead = try decode(rich, first: UInt64(ArchiveIndex.headerSize))
                if ArchiveIndex.hasMagic(richHead) {
                    let indexLimit = maxIndexBytes ?? ArchiveReader.indexAllowance(fileSize: file.size)
                    guard rich.uncompressedSize <= UInt64(clamping: indexLimit) else {
                        throw ArchiveError(
                            .limitExceeded, "index block of \(rich.uncompressedSize) bytes exceeds the limit of \(indexLimit)",
                            path: path, offset: rich.compressedOffset)
                    }
                    do {
                        // Everything the header promises is checked before the block is decoded.
                        let entryLimit = maxEntries ?? ArchiveReader.defaultMaxEntries
                        let archiveSize = maxEntries == nil ? file.size : nil
                        let header = try ArchiveIndex.header(
                            richHead, maxEntries: entryLimit, archiveSize: archiveSize,
                            blockOffset: rich.compressedOffset)
                        guard header.tarSize == rich.uncompressedOffset else {
                            throw ArchiveError(
                                .corrupt, "index says the tar stream is \(header.tarSize) bytes, blocks say \(rich.uncompressedOffset)",
                                offset: rich.compressedOffset)
                        }
                        guard header.byteCount <= rich.uncompressedSize else {
                            throw ArchiveError(
                                .corrupt,
                                "archive index: its header describes \(header.byteCount) bytes, the block holds \(rich.uncompressedSize)",
                                offset: rich.compressedOffset)
                        }
                        let bytes = try decode(rich, first: nil)
                        index = try ArchiveIndex.decode(
                            bytes, maxEntries: entryLimit, archiveSize: archiveSize,
                            blockOffset: rich.compressedOffset)
                        dataBlocks = blocks.count - 2
                    } catch var error as ArchiveError {
                        error.path = path
                        throw error
                    }
                }
            }
        }
        self.index = index
        self.hasPixzIndex = pixz
        self.dataBlockCount = dataBlocks
        self.mode = index == nil ? .sequential : .indexed
    }

    deinit {
        decodeThreads.withLock { $0?.shutdown() }
    }

    /// The reader's decode threads, one per active core, started on first use.
    private var decodePool: WorkerThreadPool {
        decodeThreads.withLock { pool in
            if let pool { return pool }
            let started = WorkerThreadPool(threads: PackOptions.activeCores, name: "amk-decode")
            pool = started
            return started
        }
    }

    /// Decodes the first `count` bytes of a block, or the whole block (its check verified) when
    /// `count` is nil; for the index blocks, whose size the caller has already held to a limit.
    static func decode(
        file: ArchiveFile, record: XZIndexRecord, check: XZCheck, first count: UInt64?,
        maxDecoderMemory: UInt64
    ) throws -> [UInt8] {
        let stream = BlockStream(file: file, record: record, check: check, decoder: BlockDecoder(memoryLimit: maxDecoderMemory))
        let wanted = min(count ?? record.uncompressedSize, record.uncompressedSize)
        var out: [UInt8] = []
        out.reserveCapacity(Int(wanted))
        // Whole: ask for more than the block holds, so that it is read to its end and its check
        // verified; the decoder refuses output past the size the xz Index gives.
        try stream.decode(maxBytes: count == nil ? .max : Int(wanted)) { out.append(contentsOf: $0) }
        return out
    }

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
        guard let index, let fileIndex else {
            // Without an index the member is found by decoding up to it; its bytes are kept in
            // memory (bounded) because the scan runs on another thread than `output`.
            let wanted = name.hasSuffix("/") ? String(name.dropLast()) : name
            var consumer = TarConsumer()
            consumer.capture = wanted
            consumer.captureLimit = maxSequentialBytes
            let box = ConsumerBox(consumer)
            let io = WorkerThreadPool(threads: 1, name: "amk-scan")
            defer { io.shutdown() }
            do {
                try await sequentialDecode(box: box, io: io, until: { $0.captureDone })
            } catch {
                throw typed(error, box: box)
            }
            guard let bytes = box.state.withLock({ $0.consumer.captureDone ? $0.consumer.captured : nil }) else {
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
        try await readMember(entry, fileIndex: fileIndex, parallelism: PackOptions.activeCores, onHeader: { _ in }) { piece in
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
        _ entry: ArchiveEntry, fileIndex: XZFileIndex, parallelism: Int,
        onHeader: (TarHeader) async throws -> Void,
        deliver: (DecodedPiece) async throws -> Void
    ) async throws {
        let span = try span(of: entry, fileIndex: fileIndex)
        var cursor = MemberCursor(entry, end: span.end, path: path)
        try await decodeBlocks(span.blocks, from: entry.headerOffset, to: span.end, parallelism: parallelism) { piece in
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
        if index != nil, let fileIndex, dataBlockCount < fileIndex.blocks.count {
            try await decodeBlocks(dataBlockCount...(fileIndex.blocks.count - 1), to: .max, parallelism: 1) { _ in }
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
        if let index, let fileIndex, let members = options.members {
            // Matching millions of paths against the selection takes long enough to hold up the
            // cooperative pool: it runs on a decode thread.
            let (selected, bytes) = try await decodePool.run { _ in
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
                let result = try await extractSelected(selected, fileIndex: fileIndex, to: directory, options: options)
                return ExtractSummary(
                    entries: result.extracted, bytes: result.bytes, warnings: result.warnings,
                    seconds: (ContinuousClock.now - start).secondsValue)
            }
        }
        let result = try await run(
            TarConsumer(expected: index?.entries, filter: options.members), parallelism: options.parallelism,
            extractTo: (directory, options))
        return ExtractSummary(
            entries: result.extracted, bytes: result.bytes, warnings: result.warnings,
            seconds: (ContinuousClock.now - start).secondsValue)
    }

    /// Extracts `entries` of an indexed archive by random access, decoding each block they span
    /// once: members are grouped by the blocks they share, each group's blocks are decoded once
    /// from the first member's header to the last member's end, and ``SelectiveExtraction``
    /// hands each member its bytes as they pass. Each member's tar header must agree with its
    /// index entry before anything is created, and its checksum must match before it is finished
    /// and put in place; on any failure the member being written is removed. The entries come in
    /// index order, which is archive order (the index refuses header offsets that go backwards),
    /// so of several members with one path the last one wins, as in a full extraction. Every
    /// system call runs on a thread of our own, and the decoded pieces are handed to it as they
    /// are, without a copy.
    private func extractSelected(
        _ entries: [ArchiveEntry], fileIndex: XZFileIndex,
        to directory: String, options: ExtractOptions
    ) async throws -> RunResult {
        let groups = try Self.groups(entries) { entry throws(ArchiveError) in try span(of: entry, fileIndex: fileIndex) }
        let extraction = SelectiveExtraction(path: path)
        let io = WorkerThreadPool(threads: 1, name: "amk-extract")
        defer { io.shutdown() }
        let archiveSize = file.size
        do {
            try await io.run { _ in try extraction.start(destination: directory, options: options, archiveSize: archiveSize) }
            for group in groups {
                try Task.checkCancellation()
                extraction.begin(group)
                let watchdog = options.watchdog
                try await decodeBlocks(
                    group.blocks, from: group.from, to: group.to, parallelism: options.parallelism,
                    watchdog: watchdog
                ) { piece in
                    try await io.run { _ in
                        let job = watchdog?.begin(.write, job: "extracting tar bytes at \(piece.offset)")
                        defer { if let job { watchdog?.end(job) } }
                        try extraction.consume(piece)
                    }
                }
                try extraction.endGroup()
            }
            return try await io.run { _ in try extraction.finish(members: entries.count) }
        } catch {
            await Self.cleanUp(on: io) { extraction.abandon() }
            throw error
        }
    }

    /// Groups `entries` (in archive order) so that each block is decoded once: a member joins the
    /// group before it when it starts in a block that group reaches and after its last member's
    /// end. A member starting before the previous one ends (an index describing overlapping
    /// members) starts a group of its own.
    static func groups(
        _ entries: [ArchiveEntry],
        span: (ArchiveEntry) throws(ArchiveError) -> (blocks: ClosedRange<Int>, end: UInt64)
    ) throws(ArchiveError) -> [SelectiveExtraction.Group] {
        var groups: [SelectiveExtraction.Group] = []
        for entry in entries {
            let (blocks, end) = try span(entry)
            if var group = groups.last, blocks.lowerBound <= group.blocks.upperBound, entry.headerOffset >= group.to {
                group.blocks = group.blocks.lowerBound...max(group.blocks.upperBound, blocks.upperBound)
                group.to = end
                group.members.append((entry, end))
                groups[groups.count - 1] = group
            } else {
                groups.append(SelectiveExtraction.Group(blocks: blocks, from: entry.headerOffset, to: end, members: [(entry, end)]))
            }
        }
        return groups
    }

    /// Runs `body` (removing what a failed extraction left) on `io`, even when the task is
    /// cancelled: `WorkerThreadPool.run` would skip it then.
    private static func cleanUp(on io: WorkerThreadPool, _ body: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            io.submit {
                body()
                continuation.resume()
            }
        }
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
                        state.consumer.extractor = try Extractor(
                            destination: extractTo.directory, options: extractTo.options,
                            archiveSize: archiveSize)
                    }
                }
            }
            if let fileIndex, dataBlockCount > 0 {
                // With an xz Index, ours or another writer's (`xz -T`, pixz), the blocks are known
                // and decode in parallel; a foreign archive's every block is tar stream.
                let watchdog = extractTo?.options.watchdog
                try await decodeBlocks(
                    0...(dataBlockCount - 1), to: index?.tarSize ?? fileIndex.uncompressedSize, parallelism: parallelism,
                    watchdog: watchdog
                ) { piece in
                    try await io.run { _ in
                        let job = watchdog?.begin(.write, job: "extracting tar bytes at \(piece.offset)")
                        defer { if let job { watchdog?.end(job) } }
                        try box.state.withLock { state in try piece.withBytes { try state.consumer.consume($0) } }
                    }
                }
            } else {
                try await sequentialDecode(box: box, io: io)
            }
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
            await Self.cleanUp(on: io) { box.state.withLock { $0.consumer.extractor?.abandonCurrent() } }
            throw typed(error, box: box)
        }
    }

    /// The tar parser's errors as the ``ArchiveError`` this reader promises (`.corrupt`, naming the
    /// member the stream stopped in, if any); other errors unchanged.
    private func typed(_ error: any Error, box: ConsumerBox) -> any Error {
        guard let tar = error as? TarError else { return error }
        let member = box.state.withLock { $0.consumer.unfinishedMember }
        return ArchiveError.fromTar(tar, path: path, member: member)
    }

    // MARK: - Decoding blocks

    /// Decoded tar bytes handed on without a copy: `bytes[range]`, which start at `offset` in the
    /// tar stream. Sendable, so a piece can go to the thread that writes it as it is.
    struct DecodedPiece: Sendable {
        let bytes: [UInt8]
        let range: Range<Int>
        let offset: UInt64

        var count: Int { range.count }

        func withBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
            // `Array.withUnsafeBytes` rethrows untyped; carry the typed error out in a Result.
            let result = bytes.withUnsafeBytes { raw in
                Result { () throws(E) -> R in try body(UnsafeRawBufferPointer(rebasing: raw[range])) }
            }
            return try result.get()
        }

        /// The part of the piece between tar offsets `offsets`, which must lie within it; the same
        /// buffer, not a copy.
        func slice(_ offsets: Range<UInt64>) -> DecodedPiece {
            let lower = range.lowerBound + Int(offsets.lowerBound - offset)
            return DecodedPiece(
                bytes: bytes, range: lower..<(lower + Int(offsets.upperBound - offsets.lowerBound)),
                offset: offsets.lowerBound)
        }
    }

    /// A block being streamed, shared by the jobs that decode it one piece after another.
    private final class StreamedBlock: Sendable {
        private let stream: Mutex<BlockStream>

        init(_ stream: sending BlockStream) {
            self.stream = Mutex(stream)
        }

        /// The next piece of at most `maxBytes`, never past `limit` bytes of the block (nil: the
        /// whole block, its check verified); nil when there is nothing more.
        func next(maxBytes: Int, limit: UInt64?, flag: CancellationFlag) throws -> [UInt8]? {
            try stream.withLock { stream -> [UInt8]? in
                if stream.isFinished { return nil }
                var wanted = maxBytes
                if let limit {
                    guard stream.delivered < limit else { return nil }
                    wanted = Int(min(UInt64(maxBytes), limit - stream.delivered))
                }
                var out: [UInt8] = []
                out.reserveCapacity(wanted)
                try stream.decode(maxBytes: wanted, isCancelled: { flag.isCancelled }) { out.append(contentsOf: $0) }
                return out
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
    func decodeBlocks(
        _ range: ClosedRange<Int>, from: UInt64 = 0, to: UInt64, parallelism: Int, watchdog: Watchdog? = nil,
        deliver: (DecodedPiece) async throws -> Void
    ) async throws {
        guard let fileIndex else { return }
        let file = self.file
        let memory = maxDecoderMemory
        let buffered = maxBufferedBlockSize
        let pool = decodePool

        /// How much of a block to decode: nil for all of it (its check then verified).
        func limit(_ record: XZIndexRecord) -> UInt64? {
            // The xz Index has checked that every block's end fits below 2^63.
            to < record.uncompressedOffset + record.uncompressedSize ? to - min(to, record.uncompressedOffset) : nil
        }
        /// Hands on the part of `bytes` (which start at tar offset `at`) between `from` and `to`.
        func hand(_ bytes: [UInt8], at: UInt64) async throws {
            let end = at + UInt64(bytes.count)
            let lower = max(from, at)
            let upper = min(to, end)
            guard lower < upper else { return }
            try await deliver(DecodedPiece(bytes: bytes, range: Int(lower - at)..<Int(upper - at), offset: lower))
        }

        try await withThrowingTaskGroup(of: (Int, [UInt8]).self) { group in
            var next = range.lowerBound
            var pending: [Int: [UInt8]] = [:]
            var deliverNext = range.lowerBound
            let window = max(1, parallelism) + 1
            // The pool has a thread per core, shared by the reader's calls: at most
            // `parallelism` of this call's blocks decode at once.
            var decoding = 0
            while deliverNext <= range.upperBound {
                while next <= range.upperBound && (next - deliverNext) < window && decoding < max(1, parallelism) {
                    let blockIndex = next
                    next += 1
                    let record = fileIndex.blocks[blockIndex]
                    guard record.uncompressedSize <= buffered else { continue }  // streamed in its turn
                    let check = fileIndex.check(ofBlock: blockIndex)
                    let stop = limit(record)
                    decoding += 1
                    blockDecodes.add(1, ordering: .relaxed)
                    group.addTask {
                        let bytes = try await pool.run { flag in
                            // Timed from when a thread takes it, like a compression.
                            let job = watchdog?.begin(.compress, job: "decoding block \(blockIndex)")
                            defer { if let job { watchdog?.end(job) } }
                            return try ArchiveReader.decodeBuffered(
                                file: file, record: record, check: check, limit: stop,
                                maxDecoderMemory: memory, flag: flag)
                        }
                        return (blockIndex, bytes)
                    }
                }
                let record = fileIndex.blocks[deliverNext]
                if record.uncompressedSize > buffered {
                    let check = fileIndex.check(ofBlock: deliverNext)
                    let stop = limit(record)
                    blockDecodes.add(1, ordering: .relaxed)
                    let block = StreamedBlock(
                        BlockStream(
                            file: file, record: record, check: check,
                            decoder: BlockDecoder(memoryLimit: memory)))
                    var at = record.uncompressedOffset
                    let blockIndex = deliverNext
                    while let piece = try await pool.run({ [at] flag in
                        let job = watchdog?.begin(.compress, job: "decoding block \(blockIndex) at \(at)")
                        defer { if let job { watchdog?.end(job) } }
                        return try block.next(maxBytes: ArchiveReader.streamPiece, limit: stop, flag: flag)
                    }) {
                        try await hand(piece, at: at)
                        at += UInt64(piece.count)
                    }
                    deliverNext += 1
                    continue
                }
                if let ready = pending.removeValue(forKey: deliverNext) {
                    try await hand(ready, at: record.uncompressedOffset)
                    deliverNext += 1
                    continue
                }
                guard let (done, bytes) = try await group.next() else { break }
                decoding -= 1
                pending[done] = bytes
            }
        }
    }

    /// Decodes (the first `limit` bytes of) a block of at most ``maxBufferedBlockSize`` bytes
    /// into one array, on a decode thread, with that thread's decoder.
    static func decodeBuffered(
        file: ArchiveFile, record: XZIndexRecord, check: XZCheck, limit: UInt64?,
        maxDecoderMemory: UInt64, flag: CancellationFlag
    ) throws -> [UInt8] {
        let dictionary = Thread.current.threadDictionary
        let key = "amk.decoder.\(maxDecoderMemory)"
        let decoder: BlockDecoder
        if let existing = dictionary[key] as? BlockDecoder {
            decoder = existing
        } else {
            decoder = BlockDecoder(memoryLimit: maxDecoderMemory)
            dictionary[key] = decoder
        }
        let stream = BlockStream(file: file, record: record, check: check, decoder: decoder)
        let wanted = min(limit ?? record.uncompressedSize, record.uncompressedSize)
        var out: [UInt8] = []
        // At most the buffered-block bound, the caller has checked.
        out.reserveCapacity(Int(wanted))
        try stream.decode(maxBytes: limit == nil ? .max : Int(wanted), isCancelled: { flag.isCancelled }) {
            out.append(contentsOf: $0)
        }
        return out
    }

    // MARK: - Sequential mode

    struct ScanResult {
        var collected: [ArchiveEntry]?
        var metadata: [String: String]
    }

    /// Reads the file from the start through one streaming decoder into `box`.
    private func sequentialDecode(box: ConsumerBox, io: WorkerThreadPool, until: (@Sendable (TarConsumer) -> Bool)? = nil) async throws {
        let memory = maxDecoderMemory
        box.state.withLock { $0.decoder = StreamDecoder(memoryLimit: memory) }
        let file = self.file
        var offset: UInt64 = 0
        let piece = 1 << 20
        while offset < file.size {
            try Task.checkCancellation()
            let at = offset
            let stop = try await io.run { _ -> Bool in
                let bytes = try file.readAvailable(at: at, count: piece)
                return try box.state.withLock { state -> Bool in
                    do {
                        try bytes.withUnsafeBytes { raw in
                            try state.decoder!.feed(raw) { out in try state.consumer.consume(out) }
                        }
                    } catch let error as XZError {
                        throw ArchiveError(
                            error.code == .memoryLimit ? .limitExceeded : .corrupt, error.message,
                            path: file.path, offset: error.offset ?? at, underlying: error)
                    }
                    return until?(state.consumer) ?? false
                }
            }
            if stop { return }
            offset += UInt64(piece)
        }
        try await io.run { _ in
            try box.state.withLock { state in
                do {
                    try state.decoder!.finish { out in try state.consumer.consume(out) }
                } catch let error as XZError {
                    throw ArchiveError(.corrupt, error.message, path: file.path, offset: error.offset ?? file.size, underlying: error)
                }
            }
        }
    }

    private func scan(collect: Bool, stopAfterFirstMember: Bool = false) async throws -> ScanResult {
        let box = ConsumerBox(TarConsumer(collect: collect))
        let io = WorkerThreadPool(threads: 1, name: "amk-scan")
        defer { io.shutdown() }
        do {
            if stopAfterFirstMember {
                try await sequentialDecode(box: box, io: io, until: { $0.members > 0 })
            } else {
                if let fileIndex, dataBlockCount > 0 {
                    // A foreign archive with an xz Index (a file from `xz -T`, pixz): its blocks
                    // decode in parallel, as for an extraction.
                    try await decodeBlocks(
                        0...(dataBlockCount - 1), to: fileIndex.uncompressedSize, parallelism: PackOptions.activeCores
                    ) { piece in
                        try await io.run { _ in try box.state.withLock { state in try piece.withBytes { try state.consumer.consume($0) } } }
                    }
                } else {
                    try await sequentialDecode(box: box, io: io)
                }
                try await io.run { _ in try box.state.withLock { try $0.consumer.finish() } }
            }
        } catch {
            throw typed(error, box: box)
        }
        let (collected, metadata) = box.state.withLock { ($0.consumer.collected, $0.consumer.metadata) }
        return ScanResult(collected: collected, metadata: metadata)
    }
}
