import Foundation
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

    /// Largest rich index block accepted.
    public static let defaultMaxIndexBytes = 1 << 30

    /// Opens `path`.
    /// - Parameters:
    ///   - maxIndexBytes: refuse a rich index larger than this when decompressed.
    ///   - maxEntries: refuse an index listing more members.
    public init(path: String, maxIndexBytes: Int = ArchiveReader.defaultMaxIndexBytes, maxEntries: Int = 10_000_000) throws {
        self.path = path
        _ = AllocatorTuning.applied
        let file = try ArchiveFile(path: path)
        self.file = file
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
            let lastHead = try ArchiveReader.decode(file: file, record: last, check: check, stopAfter: 8, maxOutput: 8)
            if PixzIndex.hasMagic(lastHead) {
                pixz = true
                let richHead = try ArchiveReader.decode(file: file, record: rich, check: check, stopAfter: 8, maxOutput: 8)
                if ArchiveIndex.hasMagic(richHead) {
                    guard rich.uncompressedSize <= UInt64(maxIndexBytes) else {
                        throw ArchiveError(.limitExceeded, "index block of \(rich.uncompressedSize) bytes exceeds the limit of \(maxIndexBytes)",
                                           path: path, offset: rich.compressedOffset)
                    }
                    let bytes = try ArchiveReader.decode(file: file, record: rich, check: check, stopAfter: nil, maxOutput: maxIndexBytes)
                    do {
                        let decoded = try ArchiveIndex.decode(bytes, maxEntries: maxEntries, blockOffset: rich.compressedOffset)
                        guard decoded.tarSize == rich.uncompressedOffset else {
                            throw ArchiveError(.corrupt, "index says the tar stream is \(decoded.tarSize) bytes, blocks say \(rich.uncompressedOffset)",
                                               offset: rich.compressedOffset)
                        }
                        index = decoded
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

    /// Decodes one block from the file (small reads, such as an index or a block's first bytes).
    static func decode(file: ArchiveFile, record: XZIndexRecord, check: XZCheck, stopAfter: UInt64?, maxOutput: Int) throws -> [UInt8] {
        let compressed = try file.read(at: record.compressedOffset, count: Int(record.totalSize))
        var out: [UInt8] = []
        let decoder = BlockDecoder()
        do {
            _ = try compressed.withUnsafeBytes { raw in
                try decoder.decode(block: raw, check: check, fileOffset: record.compressedOffset, stopAfter: stopAfter) { slice in
                    guard out.count + slice.count <= maxOutput + Int(stopAfter == nil ? 0 : slice.count) else {
                        throw ArchiveError(.limitExceeded, "block decodes to more than \(maxOutput) bytes", offset: record.compressedOffset)
                    }
                    out.append(contentsOf: slice)
                }
            }
        } catch let error as XZError {
            throw ArchiveError(.corrupt, error.description, path: file.path, offset: error.offset ?? record.compressedOffset)
        }
        if let stopAfter, out.count > Int(stopAfter) { out.removeLast(out.count - Int(stopAfter)) }
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

    /// The member named `name` (with or without a directory's trailing `/`).
    public func entry(named name: String) async throws -> ArchiveEntry? {
        let wanted = name.hasSuffix("/") ? String(name.dropLast()) : name
        return try await entries().first { $0.name == wanted }
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
    /// (indexed) or scanning to it (sequential). The checksum in the index is verified.
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
        guard let entry = index.entries.first(where: { $0.name == wanted }) else {
            throw ArchiveError(.memberNotFound, "no such member", path: path, member: name)
        }
        try await read(entry: entry, index: index, fileIndex: fileIndex, into: output)
    }

    /// The content of an indexed member: only the blocks it spans are decoded, the last one only
    /// as far as the member goes, and the content checksum is verified.
    private func read(entry: ArchiveEntry, index: ArchiveIndex, fileIndex: XZFileIndex,
                      into output: (UnsafeRawBufferPointer) throws -> Void) async throws {
        let name = entry.path
        guard entry.kind == .regular, entry.size > 0 else { return }
        let start = entry.dataOffset, end = entry.dataOffset + entry.size
        guard let first = fileIndex.locate(uncompressedOffset: start),
              let last = fileIndex.locate(uncompressedOffset: end - 1), last < dataBlockCount else {
            throw ArchiveError(.corrupt, "member lies outside the data blocks", path: path, member: name, offset: start)
        }
        var checksum: UInt64 = 0
        try await decodeBlocks(first...last, parallelism: PackOptions.activeCores, stopAt: end) { _, bytes, blockStart in
            let from = Int(max(start, blockStart) - blockStart)
            let to = Int(min(end, blockStart + UInt64(bytes.count)) - blockStart)
            guard from < to else { return }
            try bytes[from..<to].withUnsafeBytes { slice in
                checksum = CRC.crc64(slice, previous: checksum)
                try output(slice)
            }
        }
        if let expected = entry.checksum, expected != checksum {
            throw ArchiveError(.checksumMismatch, "content checksum mismatch", path: path, member: name, offset: start)
        }
    }

    /// The content of member `name`, refusing members larger than `maxBytes`.
    public func contents(of name: String, maxBytes: Int = 1 << 30) async throws -> [UInt8] {
        if let entry = try await entry(named: name), entry.size > UInt64(maxBytes) {
            throw ArchiveError(.limitExceeded, "member is \(entry.size) bytes, over the limit of \(maxBytes)", path: path, member: name)
        }
        var out: [UInt8] = []
        try await read(member: name, maxSequentialBytes: maxBytes) { slice in
            guard out.count + slice.count <= maxBytes else {
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
            try await decodeBlocks(dataBlockCount...(fileIndex.blocks.count - 1), parallelism: 1, stopAt: .max) { _, _, _ in }
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
            // once rather than decoding shared blocks again for each member.
            if selected.reduce(0, { $0 + $1.size }) * 4 < index.tarSize {
                let result = try await extractSelected(selected, index: index, fileIndex: fileIndex,
                                                       to: directory, options: options)
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

    /// Extracts `entries` of an indexed archive one by one from the index: each member's header is
    /// rebuilt from its index record and its content read by random access (checksum verified).
    /// The slices are written as they are decoded; a member is at most a few blocks of
    /// page-cache writes, which is short work for the calling task.
    private func extractSelected(_ entries: [ArchiveEntry], index: ArchiveIndex, fileIndex: XZFileIndex,
                                 to directory: String, options: ExtractOptions) async throws -> RunResult {
        let box = ConsumerBox(TarConsumer(extractor: try Extractor(destination: directory, options: options,
                                                                    archiveSize: file.size)))
        do {
            for entry in entries {
                try Task.checkCancellation()
                let header = TarHeader(path: entry.path, kind: entry.kind, size: entry.size, mode: entry.mode,
                                       uid: entry.uid, gid: entry.gid, mtime: entry.mtime, linkTarget: entry.linkTarget)
                try box.state.withLock { try $0.consumer.extractor!.begin(header) }
                try await read(entry: entry, index: index, fileIndex: fileIndex) { slice in
                    let bytes = Array(slice)
                    try box.state.withLock { state in try bytes.withUnsafeBytes { try state.consumer.extractor!.write($0) } }
                }
                try box.state.withLock { try $0.consumer.extractor!.endMember() }
            }
            return try box.state.withLock { state in
                let extractor = state.consumer.extractor!
                try extractor.finish()
                return RunResult(members: entries.count, extracted: extractor.entries, bytes: extractor.bytes,
                                 warnings: extractor.warnings)
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
                try await decodeBlocks(0...(dataBlockCount - 1), parallelism: parallelism, stopAt: index.tarSize) { _, bytes, _ in
                    try await io.run { _ in
                        try box.state.withLock { state in try bytes.withUnsafeBytes { try state.consumer.consume($0) } }
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
        let place = tar.offset.map { " at tar offset \($0)" } ?? ""
        return ArchiveError(.corrupt, "damaged tar stream\(place): \(tar.message)", path: path, member: member,
                            offset: member == nil ? nil : tar.offset)
    }

    /// Decodes blocks `range` with up to `parallelism` in flight and hands each block's bytes to
    /// `deliver` in order, with the block's uncompressed start offset. Decoding stops at `stopAt`.
    func decodeBlocks(_ range: ClosedRange<Int>, parallelism: Int, stopAt: UInt64,
                      deliver: (Int, [UInt8], UInt64) async throws -> Void) async throws {
        guard let fileIndex else { return }
        let file = self.file
        let pool = WorkerThreadPool(threads: max(1, min(parallelism, range.count)), name: "amk-decode")
        defer { pool.shutdown() }
        try await withThrowingTaskGroup(of: (Int, [UInt8]).self) { group in
            var next = range.lowerBound
            var pending: [Int: [UInt8]] = [:]
            var deliverNext = range.lowerBound
            let limit = max(1, parallelism) + 1
            while deliverNext <= range.upperBound {
                while next <= range.upperBound && (next - deliverNext) < limit {
                    let blockIndex = next
                    let record = fileIndex.blocks[blockIndex]
                    let check = fileIndex.check(ofBlock: blockIndex)
                    let stop: UInt64? = stopAt < record.uncompressedOffset + record.uncompressedSize
                        ? stopAt - min(stopAt, record.uncompressedOffset) : nil
                    group.addTask {
                        let bytes = try await pool.run { flag in
                            try ArchiveReader.decodeOnThread(file: file, record: record, check: check, stopAfter: stop, flag: flag)
                        }
                        return (blockIndex, bytes)
                    }
                    next += 1
                }
                guard let (done, bytes) = try await group.next() else { break }
                pending[done] = bytes
                while let ready = pending.removeValue(forKey: deliverNext) {
                    try await deliver(deliverNext, ready, fileIndex.blocks[deliverNext].uncompressedOffset)
                    deliverNext += 1
                }
            }
        }
    }

    static func decodeOnThread(file: ArchiveFile, record: XZIndexRecord, check: XZCheck, stopAfter: UInt64?,
                               flag: CancellationFlag) throws -> [UInt8] {
        let dictionary = Thread.current.threadDictionary
        let decoder: BlockDecoder
        if let existing = dictionary["amk.decoder"] as? BlockDecoder {
            decoder = existing
        } else {
            decoder = BlockDecoder()
            dictionary["amk.decoder"] = decoder
        }
        let compressed = try file.read(at: record.compressedOffset, count: Int(record.totalSize))
        var out: [UInt8] = []
        out.reserveCapacity(Int(min(stopAfter ?? record.uncompressedSize, record.uncompressedSize)))
        do {
            let produced = try compressed.withUnsafeBytes { raw in
                try decoder.decode(block: raw, check: check, fileOffset: record.compressedOffset, stopAfter: stopAfter,
                                   isCancelled: { flag.isCancelled }) { slice in
                    out.append(contentsOf: slice)
                }
            }
            if stopAfter == nil && produced != record.uncompressedSize {
                throw ArchiveError(.corrupt, "block decoded to \(produced) bytes, the index says \(record.uncompressedSize)",
                                   path: file.path, offset: record.compressedOffset)
            }
        } catch let error as XZError {
            throw ArchiveError(.corrupt, error.message, path: file.path, offset: error.offset ?? record.compressedOffset)
        }
        if let stopAfter, out.count > Int(stopAfter) { out.removeLast(out.count - Int(stopAfter)) }
        return out
    }

    // MARK: - Sequential mode

    struct ScanResult {
        var collected: [ArchiveEntry]?
        var metadata: [String: String]
    }

    /// Reads the file from the start through one streaming decoder into `box`.
    private func sequentialDecode(box: ConsumerBox, io: WorkerThreadPool, until: (@Sendable (TarConsumer) -> Bool)? = nil) async throws {
        box.state.withLock { $0.decoder = StreamDecoder() }
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
                        throw ArchiveError(.corrupt, error.message, path: file.path, offset: error.offset ?? at)
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
                    throw ArchiveError(.corrupt, error.message, path: file.path, offset: error.offset ?? file.size)
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
