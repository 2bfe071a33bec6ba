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
    /// Damage found in the pixz index block when the archive was opened (see ``ArchiveLayout``).
    let pixzIndexDamage: ArchiveError?
    /// The blocks read as tar stream (see ``ArchiveLayout/dataBlockCount``).
    let dataBlockCount: Int
    /// The file's blocks, decoded for every reading; nil when the xz Index cannot be read.
    let blocks: BlockScheduler?
    /// The most memory one decoder may use (mostly the LZMA2 dictionary).
    let maxDecoderMemory: UInt64
    /// The selection ``index`` holds the entries of, for a reader opened by
    /// ``open(path:selecting:maxIndexBytes:maxEntries:maxBufferedBlockSize:maxDecoderMemory:)``;
    /// nil when it holds every member.
    let selection: MemberFilter?
    /// Members the rich index lists, whether ``index`` holds them all or a selection.
    let memberCount: Int?
    /// Why the archive's own rich index was not used, when it was there but its names add up to
    /// more than is read for a file of this size (see ``indexAllowance(fileSize:)``): the
    /// archive is then read ``Mode/sequential``, as one without the index. A caller shows it as
    /// a note.
    public let indexSkipped: String?
    /// The limits the reader was opened with.
    private let limits: Limits

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
        try await opened(
            path: path,
            limits: Limits(
                maxIndexBytes: maxIndexBytes, maxEntries: maxEntries, maxBufferedBlockSize: maxBufferedBlockSize,
                maxDecoderMemory: maxDecoderMemory))
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
    /// `onIndexSkipped` is told ``indexSkipped`` when the index is there but not used.
    package static func memberPathList(
        path: String, maxIndexBytes: Int? = nil, maxEntries: Int? = nil,
        maxBufferedBlockSize: Int = ArchiveReader.defaultMaxBufferedBlockSize,
        maxDecoderMemory: Int = ArchiveReader.defaultMaxDecoderMemory,
        onIndexSkipped: (@Sendable (String) -> Void)? = nil
    ) async throws -> MemberPathList {
        let thread = WorkerThreadPool(threads: 1, name: "amk-open")
        defer { thread.shutdown() }
        // Without our index the end of the file says all a full opening would: the reader is
        // made from what was read, not by reading it again.
        let opened = try await thread.run { _ -> PathsOrReader in
            let (file, layout) = try pathsLayout(
                path: path, maxIndexBytes: maxIndexBytes, maxEntries: maxEntries, maxDecoderMemory: maxDecoderMemory)
            if let paths = layout.paths { return .paths(paths) }
            return .reader(
                ArchiveReader(
                    path: path, file: file, layout: layout,
                    limits: Limits(
                        maxIndexBytes: maxIndexBytes, maxEntries: maxEntries, maxBufferedBlockSize: maxBufferedBlockSize,
                        maxDecoderMemory: maxDecoderMemory)))
        }
        switch opened {
        case .paths(let paths): return paths
        case .reader(let reader):
            if let skipped = reader.indexSkipped { onIndexSkipped?(skipped) }
            return MemberPathList(try await reader.entries().map(\.path))
        }
    }

    /// The paths of `path`'s members from its rich index, read on the calling thread, which it
    /// blocks; nil when the archive has no rich index to give them (such an archive needs
    /// ``memberPathList(path:maxIndexBytes:maxEntries:maxBufferedBlockSize:maxDecoderMemory:)``).
    ///
    /// For a program's main thread before it starts any concurrent work (`amk list ARCHIVE`): a
    /// listing of a real tree's 13,891 members takes about 10 ms, and starting the thread the
    /// asynchronous call reads on, and the cooperative threads that await it, was a tenth of that.
    package static func memberPathListBlocking(path: String) throws -> MemberPathList? {
        try pathsLayout(path: path, maxIndexBytes: nil, maxEntries: nil, maxDecoderMemory: defaultMaxDecoderMemory).layout.paths
    }

    /// Opens `path` and reads the end of the file, decoding only the names of a rich index.
    private static func pathsLayout(
        path: String, maxIndexBytes: Int?, maxEntries: Int?, maxDecoderMemory: Int
    ) throws -> (file: ArchiveFile, layout: ArchiveLayout) {
        let file = try ArchiveFile(path: path)
        let layout = try ArchiveLayout.read(
            file: file, path: path, maxIndexBytes: maxIndexBytes, maxEntries: maxEntries,
            maxDecoderMemory: UInt64(clamping: maxDecoderMemory), pathsOnly: true)
        return (file, layout)
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
        self.init(
            path: path, file: file, layout: layout,
            limits: Limits(
                maxIndexBytes: maxIndexBytes, maxEntries: maxEntries, maxBufferedBlockSize: maxBufferedBlockSize,
                maxDecoderMemory: maxDecoderMemory))
    }

    /// Opens `path` to extract `members` (at most ``TarConsumer/fewMembers``; paths as
    /// ``ExtractOptions/members`` takes them), the way `amk extract ARCHIVE MEMBER` does: the
    /// rich index is decoded and checked whole, but only the entries the selection chooses are
    /// made, which is most of the cost of opening an archive of many members to take one.
    ///
    /// ``entries()`` and ``entry(named:)`` answer among the chosen members only, and
    /// ``extract(to:options:)`` with the same selection extracts them by random access. Any
    /// other reading (another selection, a member not chosen, ``verify()``, a selection too large
    /// for random access) first decodes the whole index again, from the same descriptor.
    /// Without a version 2 rich index, or with more members, this is
    /// ``open(path:maxIndexBytes:maxEntries:maxBufferedBlockSize:maxDecoderMemory:)``.
    package static func open(
        path: String, selecting members: MemberFilter, maxIndexBytes: Int? = nil, maxEntries: Int? = nil,
        maxBufferedBlockSize: Int = ArchiveReader.defaultMaxBufferedBlockSize,
        maxDecoderMemory: Int = ArchiveReader.defaultMaxDecoderMemory
    ) async throws -> ArchiveReader {
        let limits = Limits(
            maxIndexBytes: maxIndexBytes, maxEntries: maxEntries, maxBufferedBlockSize: maxBufferedBlockSize,
            maxDecoderMemory: maxDecoderMemory)
        return try await opened(path: path, limits: limits, selecting: members.count <= TarConsumer.fewMembers ? members : nil)
    }

    /// This reader, or for one opened with a selection, a reader of the same descriptor with the
    /// whole index.
    func whole() async throws -> ArchiveReader {
        guard selection != nil else { return self }
        return try await Self.opened(path: path, file: file, limits: limits)
    }

    /// What a reader was opened with, to open the whole index when a selection's is not enough.
    struct Limits: Sendable {
        var maxIndexBytes: Int?
        var maxEntries: Int?
        var maxBufferedBlockSize: Int
        var maxDecoderMemory: Int

        /// The decoder memory a reader that decodes alone (a pipe's, a salvage's) is held to:
        /// ``ArchiveReader/defaultMaxDecoderMemory``, or half of what an address-space limit
        /// leaves when that is less (never under 1 MiB).
        static func decoderMemory(within available: Int?) -> Int {
            min(ArchiveReader.defaultMaxDecoderMemory, available.map { max(1 << 20, $0 / 2) } ?? .max)
        }

        /// These limits, lowered so that a decoder and the blocks the scheduler holds
        /// (`2 * parallelism + 2` at most) fit in half of `available` each, never under 1 MiB:
        /// under an address-space limit (``AddressSpace/available``) a block past it could not be
        /// allocated at all, and the Swift runtime would stop the process. Decoders are held to
        /// half each, not half among them, so that one large dictionary still decodes; two of
        /// them at once past the limit fail with liblzma's memory error, which names the block.
        /// A block above the lowered size is streamed in pieces instead of decoded whole.
        func fitted(toAvailable available: Int?, parallelism: Int = PackOptions.activeCores) -> Limits {
            guard let available else { return self }
            let threads = max(1, parallelism)
            var fitted = self
            fitted.maxDecoderMemory = min(maxDecoderMemory, Self.decoderMemory(within: available))
            fitted.maxBufferedBlockSize = min(maxBufferedBlockSize, max(1 << 20, available / 2 / (2 * threads + 2)))
            return fitted
        }
    }

    /// Reads the end of `file` (opened from `path` when nil) on a thread of our own: reading the
    /// end of the file and decoding the index (seconds for millions of members) would otherwise
    /// hold one of the cooperative pool's threads, and with them the tasks that wait for one.
    private static func opened(
        path: String, file: ArchiveFile? = nil, limits: Limits, selecting: MemberFilter? = nil
    ) async throws -> ArchiveReader {
        let thread = WorkerThreadPool(threads: 1, name: "amk-open")
        defer { thread.shutdown() }
        return try await thread.run { _ in
            let file = try file ?? ArchiveFile(path: path)
            let layout = try ArchiveLayout.read(
                file: file, path: path, maxIndexBytes: limits.maxIndexBytes, maxEntries: limits.maxEntries,
                maxDecoderMemory: UInt64(clamping: limits.maxDecoderMemory), selecting: selecting)
            return ArchiveReader(path: path, file: file, layout: layout, limits: limits)
        }
    }

    /// A reader of `file` (named `path`) whose end has been read into `layout`.
    private init(path: String, file: ArchiveFile, layout: ArchiveLayout, limits asked: Limits) {
        let limits = asked.fitted(toAvailable: AddressSpace.available)
        self.path = path
        self.file = file
        fileIndex = layout.fileIndex
        fileIndexProblem = layout.fileIndexProblem
        index = layout.index
        hasPixzIndex = layout.hasPixzIndex
        dataBlockCount = layout.dataBlockCount
        selection = layout.selection
        memberCount = layout.memberCount
        indexSkipped = layout.indexSkipped
        pixzIndexDamage = layout.pixzIndexDamage
        self.limits = limits
        mode = layout.index == nil ? .sequential : .indexed
        maxDecoderMemory = UInt64(clamping: limits.maxDecoderMemory)
        blocks = layout.fileIndex.map {
            BlockScheduler(
                file: file, fileIndex: $0, maxBufferedBlockSize: UInt64(clamping: limits.maxBufferedBlockSize),
                maxDecoderMemory: UInt64(clamping: limits.maxDecoderMemory))
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

    /// Every member, in archive order. Indexed archives answer from the index alone. (A reader
    /// opened for a selection lists the members it chose.)
    public func entries() async throws -> [ArchiveEntry] {
        if let index { return index.entries }
        return try await scan(collect: true).collected ?? []
    }

    /// The member named `name` (with or without a directory's trailing `/`). When several
    /// members share the name, the last one: the one a full extraction leaves in place.
    public func entry(named name: String) async throws -> ArchiveEntry? {
        let wanted = UTF8Bytes.droppingTrailingSlash(name)
        if let found = try await entries().last(where: { UTF8Bytes.equal($0.name, wanted) }) { return found }
        // Not among the members this reader was opened for: it may be among the others.
        return selection == nil ? nil : try await whole().entry(named: name)
    }

    /// Whether a stream of the file carries no integrity check (xz check type None, which `xz
    /// --check=none` writes): ``verify()`` can then hold its members only to their tar headers
    /// and the index, not their content to what was packed. False when the xz Index cannot be
    /// read (the sequential reading meets the streams as they come).
    public var isUnchecked: Bool {
        fileIndex?.streams.contains { $0.check == .none && !$0.blocks.isEmpty } ?? false
    }

    /// The structure of the file. Throws when the xz Index at the end cannot be read, since the
    /// structure is then unknown (``ArchiveSalvager`` can still recover what precedes the damage).
    public func info() async throws -> ArchiveInfo {
        guard fileIndex != nil else {
            throw ArchiveError(
                .corrupt, "the xz index at the end of the file cannot be read: \(fileIndexProblem ?? "unknown reason")", path: path)
        }
        let blockCount = fileIndex?.blocks.count ?? 0
        // Our index blocks are never read as tar stream; pixz's file index, which ends pixz's own
        // archives too, is read as what follows it: either way an index, not data.
        let indexBlocks = dataBlockCount < blockCount ? blockCount - dataBlockCount : (hasPixzIndex ? 1 : 0)
        return ArchiveInfo(
            streams: fileIndex?.streams.count ?? 0, blocks: blockCount, dataBlocks: blockCount - indexBlocks,
            fileSize: file.size, uncompressedSize: fileIndex?.uncompressedSize ?? 0,
            tarSize: index?.tarSize, chunkSize: index?.chunkSize, indexedEntries: memberCount ?? index?.entries.count,
            isIndexed: index != nil, hasPixzIndex: hasPixzIndex,
            metadata: try await metadata())
    }
}
