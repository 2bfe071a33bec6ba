import Foundation
import Synchronization
import Tar
import XZ

/// Reads an archive: lists it, reads single members, verifies and extracts it.
///
/// An archive written by this package is opened from its end: the xz footer, the xz Index (every
/// block's place) and the rich index block. Listing then decompresses no data, and reading a member
/// decodes only the blocks it spans, stopping as soon as its bytes are out. Any other `.tar.xz`
/// (`tar -cJf`, `xz -T2`, pixz; one or several streams) is read sequentially by the same API.
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
        /// Without it: decompressed from the start.
        case sequential
    }

    public let path: String
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

    /// Opens `path`.
    /// - Parameters:
    ///   - maxIndexBytes: refuse a rich index larger than this when decompressed; nil allows
    ///     ``indexAllowance(fileSize:)``.
    ///   - maxEntries: refuse an index listing more members; nil allows ``defaultMaxEntries`` and
    ///     at most one member per byte of file (see ``ArchiveIndex/minimumArchiveBytesPerEntry``).
    ///     An index can never list more members than its tar stream has room for.
    ///   - maxBufferedBlockSize: blocks decoding to more are streamed instead of decoded ahead.
    ///   - maxDecoderMemory: refuse blocks whose decoder would need more memory.
    public init(path: String, maxIndexBytes: Int? = nil, maxEntries: Int? = nil,
                maxBufferedBlockSize: Int = ArchiveReader.defaultMaxBufferedBlockSize,
                maxDecoderMemory: Int = ArchiveReader.defaultMaxDecoderMemory) throws {
        self.path = path
        _ = AllocatorTuning.applied
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
                        throw ArchiveError(.limitExceeded, "index block of \(rich.uncompressedSize) bytes exceeds the limit of \(indexLimit)",
                                           path: path, offset: rich.compressedOffset)
                    }
                    do {
                        // Everything the header promises is checked before the block is decoded.
                        let entryLimit = maxEntries ?? ArchiveReader.defaultMaxEntries
                        let archiveSize = maxEntries == nil ? file.size : nil
                        let header = try ArchiveIndex.header(richHead, maxEntries: entryLimit, archiveSize: archiveSize,
                                                             blockOffset: rich.compressedOffset)
                        guard header.tarSize == rich.uncompressedOffset else {
                            throw ArchiveError(.corrupt, "index says the tar stream is \(header.tarSize) bytes, blocks say \(rich.uncompressedOffset)",
                                               offset: rich.compressedOffset)
                        }
                        guard header.byteCount <= rich.uncompressedSize else {
                            throw ArchiveError(.corrupt, "archive index: its header describes \(header.byteCount) bytes, the block holds \(rich.uncompressedSize)",
                                               offset: rich.compressedOffset)
                        }
                        let bytes = try decode(rich, first: nil)
                        index = try ArchiveIndex.decode(bytes, maxEntries: entryLimit, archiveSize: archiveSize,
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

    /// Decodes the first `count` bytes of a block, or the whole block (its check verified) when
    /// `count` is nil; for the index blocks, whose size the caller has already held to a limit.
    static func decode(file: ArchiveFile, record: XZIndexRecord, check: XZCheck, first count: UInt64?,
                       maxDecoderMemory: UInt64) throws -> [UInt8] {
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
            throw ArchiveError(.corrupt, "the xz index at the end of the file cannot be read: \(fileIndexProblem ?? "unknown reason")", path: path)
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
    /// content (`headerOffset ..< dataOffset + size`), parses the tar header(s) found at the
    /// indexed offset (a pax `x` or GNU `L`/`K` header and the ustar block) and refuses the member
    /// unless they agree with the index entry (path, kind, size, mode, link target, offsets).
    /// `onHeader` then receives the header, and `deliver` the content in order. The content
    /// checksum is verified after the last piece: when this returns, every byte delivered was
    /// right; when it throws, the caller must discard what it received.
    ///
    /// The index alone is never trusted for what to write: an index that disagrees with the tar
    /// headers could otherwise make a reader write another member's bytes, or a link or a set-id
    /// file that no tar header describes, while `verify` (which reads the headers) rejects it.
    /// The header's mtime is taken from the index, which has the nanoseconds (`verify` checks
    /// that both agree).
    func readMember(_ entry: ArchiveEntry, fileIndex: XZFileIndex, parallelism: Int,
                    onHeader: (TarHeader) async throws -> Void,
                    deliver: (DecodedPiece) async throws -> Void) async throws {
        let name = entry.path
        let start = entry.headerOffset
        let (end, overflow) = entry.dataOffset.addingReportingOverflow(entry.size)
        guard !overflow, entry.dataOffset > start, let first = fileIndex.locate(uncompressedOffset: start),
              let last = fileIndex.locate(uncompressedOffset: end - 1), last < dataBlockCount else {
            throw ArchiveError(.corrupt, "member lies outside the data blocks", path: path, member: name, offset: start)
        }
        var parser = TarParser()
        var found: TarMember?
        var header: TarHeader?
        var checksum: UInt64 = 0
        try await decodeBlocks(first...last, from: start, to: end, parallelism: parallelism) { whole in
            var piece = whole
            if header == nil {
                let headerBytes = Int(min(UInt64(piece.count), entry.dataOffset - piece.offset))
                do {
                    try piece.withBytes { raw in
                        try parser.consume(UnsafeRawBufferPointer(rebasing: raw[..<headerBytes])) { event in
                            if case .member(let member) = event, found == nil { found = member }
                        }
                    }
                } catch let error as TarError {
                    throw ArchiveError(.corrupt, "no valid tar header at the indexed offset: \(error.message)", path: path,
                                       member: name, offset: start &+ (error.offset ?? 0), underlying: error)
                }
                piece = piece.dropFirst(headerBytes)
                guard piece.offset == entry.dataOffset else { return }
                let checked = try check(found, against: entry)
                header = checked
                try await onHeader(checked)
            }
            guard piece.count > 0 else { return }
            piece.withBytes { checksum = CRC.crc64($0, previous: checksum) }
            try await deliver(piece)
        }
        guard header != nil else {
            throw ArchiveError(.corrupt, "the member's header blocks were not decoded", path: path, member: name, offset: start)
        }
        if entry.kind == .regular, let expected = entry.checksum, expected != checksum {
            throw ArchiveError(.checksumMismatch, "content checksum mismatch", path: path, member: name, offset: entry.dataOffset)
        }
    }

    /// The header found at an entry's offset, if it is the entry's; else why not.
    private func check(_ member: TarMember?, against entry: ArchiveEntry) throws(ArchiveError) -> TarHeader {
        func disagree(_ what: String) -> ArchiveError {
            ArchiveError(.corrupt, "the tar header at the indexed offset disagrees with the index: \(what)",
                         path: path, member: entry.path, offset: entry.headerOffset)
        }
        guard let member else {
            throw disagree("no member header ends at the indexed data offset \(entry.dataOffset)")
        }
        let stored = member.header
        guard member.headerOffset == 0 else {
            throw disagree("the member's headers start \(member.headerOffset) bytes after the indexed offset")
        }
        guard entry.headerOffset &+ member.dataOffset == entry.dataOffset else {
            throw disagree("its data starts at \(entry.headerOffset &+ member.dataOffset), the index says \(entry.dataOffset)")
        }
        guard stored.path == entry.path else {
            throw disagree("the header names \(String(reflecting: stored.path))")
        }
        guard stored.kind == entry.kind else { throw disagree("the header is a \(stored.kind), the index a \(entry.kind)") }
        guard stored.size == entry.size else { throw disagree("the header gives \(stored.size) bytes, the index \(entry.size)") }
        guard stored.mode == entry.mode else {
            throw disagree("the header gives mode \(String(stored.mode, radix: 8)), the index \(String(entry.mode, radix: 8))")
        }
        guard stored.linkTarget == entry.linkTarget else {
            throw disagree("the header links to \(String(reflecting: stored.linkTarget ?? "")), the index to \(String(reflecting: entry.linkTarget ?? ""))")
        }
        var header = stored
        header.mtime = entry.mtime
        return header
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
    /// Returns the number of members checked.
    @discardableResult
    public func verify() async throws -> Int {
        let members = try await run(TarConsumer(expected: index?.entries)).members
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
            throw ArchiveError(.limitExceeded, "archive lists \(index.entries.count) members, over the limit of \(options.maxEntries)", path: path)
        }
        if let index, let fileIndex, let members = options.members {
            let selected = index.entries.filter { TarConsumer.selected($0.path, by: members) }
            // A small selection is read by random access; a large one streams the whole archive
            // once rather than decoding shared blocks again for each member. The sizes come from
            // the index: summed without trapping, however large they claim to be.
            let bytes = selected.reduce(UInt64(0)) { sum, entry in
                let (next, overflow) = sum.addingReportingOverflow(entry.size)
                return overflow ? .max : next
            }
            if bytes < index.tarSize / 4 {
                let result = try await extractSelected(selected, fileIndex: fileIndex, to: directory, options: options)
                return ExtractSummary(entries: result.extracted, bytes: result.bytes, warnings: result.warnings,
                                      seconds: (ContinuousClock.now - start).secondsValue)
            }
        }
        let extractor = try Extractor(destination: directory, options: options, archiveSize: file.size)
        let result = try await run(TarConsumer(expected: index?.entries, extractor: extractor, filter: options.members),
                                   parallelism: options.parallelism)
        return ExtractSummary(entries: result.extracted, bytes: result.bytes, warnings: result.warnings,
                              seconds: (ContinuousClock.now - start).secondsValue)
    }

    /// Extracts `entries` of an indexed archive one by one, by random access (``readMember``):
    /// each member's tar header must agree with its index entry before anything is created, and
    /// its checksum must match before it is finished and put in place; on any failure the member
    /// being written is removed. The entries come in index order, which is archive order (the
    /// index refuses header offsets that go backwards), so of several members with one path the
    /// last one wins, as in a full extraction. File system work runs on a thread of our own, and
    /// the decoded pieces are handed to it as they are, without a copy.
    private func extractSelected(_ entries: [ArchiveEntry], fileIndex: XZFileIndex,
                                 to directory: String, options: ExtractOptions) async throws -> RunResult {
        let box = ConsumerBox(TarConsumer(extractor: try Extractor(destination: directory, options: options,
                                                                    archiveSize: file.size)))
        let io = WorkerThreadPool(threads: 1, name: "amk-extract")
        defer { io.shutdown() }
        do {
            for entry in entries {
                try Task.checkCancellation()
                try await readMember(entry, fileIndex: fileIndex, parallelism: options.parallelism, onHeader: { header in
                    try await io.run { _ in try box.state.withLock { try $0.consumer.extractor!.begin(header) } }
                }, deliver: { piece in
                    try await io.run { _ in
                        try box.state.withLock { state in try piece.withBytes { try state.consumer.extractor!.write($0) } }
                    }
                })
                try await io.run { _ in try box.state.withLock { try $0.consumer.extractor!.endMember() } }
            }
            return try await io.run { _ in
                try box.state.withLock { state in
                    let extractor = state.consumer.extractor!
                    try extractor.finish()
                    return RunResult(members: entries.count, extracted: extractor.entries, bytes: extractor.bytes,
                                     warnings: extractor.warnings)
                }
            }
        } catch {
            box.state.withLock { $0.consumer.extractor?.abandonCurrent() }
            throw error
        }
    }

    /// Feeds the whole tar stream through `consumer`: blocks decoded in parallel and consumed in
    /// order (indexed), or one sequential decoder (otherwise). Returns the members seen. On failure
    /// a file being extracted is removed.
    private func run(_ consumer: sending TarConsumer, parallelism: Int = PackOptions.activeCores) async throws -> RunResult {
        let box = ConsumerBox(consumer)
        let io = WorkerThreadPool(threads: 1, name: "amk-extract")
        defer { io.shutdown() }
        do {
            if let index, fileIndex != nil {
                try await decodeBlocks(0...(dataBlockCount - 1), to: index.tarSize, parallelism: parallelism) { piece in
                    try await io.run { _ in
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
                    return RunResult(members: state.consumer.members, extracted: extractor?.entries ?? 0,
                                     bytes: extractor?.bytes ?? 0, warnings: extractor?.warnings ?? [])
                }
            }
        } catch {
            box.state.withLock { $0.consumer.extractor?.abandonCurrent() }
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

        func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
            try bytes.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[range])) }
        }

        /// The piece without its first `count` bytes.
        func dropFirst(_ count: Int) -> DecodedPiece {
            DecodedPiece(bytes: bytes, range: (range.lowerBound + count)..<range.upperBound, offset: offset + UInt64(count))
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
    func decodeBlocks(_ range: ClosedRange<Int>, from: UInt64 = 0, to: UInt64, parallelism: Int,
                      deliver: (DecodedPiece) async throws -> Void) async throws {
        guard let fileIndex else { return }
        let file = self.file
        let memory = maxDecoderMemory
        let buffered = maxBufferedBlockSize
        let pool = WorkerThreadPool(threads: max(1, min(parallelism, range.count)), name: "amk-decode")
        defer { pool.shutdown() }

        /// How much of a block to decode: nil for all of it (its check then verified).
        func limit(_ record: XZIndexRecord) -> UInt64? {
            // The xz Index has checked that every block's end fits below 2^63.
            to < record.uncompressedOffset + record.uncompressedSize ? to - min(to, record.uncompressedOffset) : nil
        }
        /// Hands on the part of `bytes` (which start at tar offset `at`) between `from` and `to`.
        func hand(_ bytes: [UInt8], at: UInt64) async throws {
            let end = at + UInt64(bytes.count)
            let lower = max(from, at), upper = min(to, end)
            guard lower < upper else { return }
            try await deliver(DecodedPiece(bytes: bytes, range: Int(lower - at)..<Int(upper - at), offset: lower))
        }

        try await withThrowingTaskGroup(of: (Int, [UInt8]).self) { group in
            var next = range.lowerBound
            var pending: [Int: [UInt8]] = [:]
            var deliverNext = range.lowerBound
            let window = max(1, parallelism) + 1
            while deliverNext <= range.upperBound {
                while next <= range.upperBound && (next - deliverNext) < window {
                    let blockIndex = next
                    next += 1
                    let record = fileIndex.blocks[blockIndex]
                    guard record.uncompressedSize <= buffered else { continue }  // streamed in its turn
                    let check = fileIndex.check(ofBlock: blockIndex)
                    let stop = limit(record)
                    group.addTask {
                        let bytes = try await pool.run { flag in
                            try ArchiveReader.decodeBuffered(file: file, record: record, check: check, limit: stop,
                                                             maxDecoderMemory: memory, flag: flag)
                        }
                        return (blockIndex, bytes)
                    }
                }
                let record = fileIndex.blocks[deliverNext]
                if record.uncompressedSize > buffered {
                    let check = fileIndex.check(ofBlock: deliverNext)
                    let stop = limit(record)
                    let block = StreamedBlock(BlockStream(file: file, record: record, check: check,
                                                          decoder: BlockDecoder(memoryLimit: memory)))
                    var at = record.uncompressedOffset
                    while let piece = try await pool.run({ flag in
                        try block.next(maxBytes: ArchiveReader.streamPiece, limit: stop, flag: flag)
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
                pending[done] = bytes
            }
        }
    }

    /// Decodes (the first `limit` bytes of) a block of at most ``maxBufferedBlockSize`` bytes
    /// into one array, on a decode thread, with that thread's decoder.
    static func decodeBuffered(file: ArchiveFile, record: XZIndexRecord, check: XZCheck, limit: UInt64?,
                               maxDecoderMemory: UInt64, flag: CancellationFlag) throws -> [UInt8] {
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
                        throw ArchiveError(error.code == .memoryLimit ? .limitExceeded : .corrupt, error.message,
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
                try await sequentialDecode(box: box, io: io)
                try await io.run { _ in try box.state.withLock { try $0.consumer.finish() } }
            }
        } catch {
            throw typed(error, box: box)
        }
        let (collected, metadata) = box.state.withLock { ($0.consumer.collected, $0.consumer.metadata) }
        return ScanResult(collected: collected, metadata: metadata)
    }
}
