import Tar
import XZ

/// Turns members into a tar stream cut into chunks of exactly `chunkSize` bytes, and records each
/// member for the indexes. Pure bookkeeping: the caller does the I/O and hands chunks on.
struct TarSerializer {
    struct FileIdentity: Hashable {
        var device: UInt64
        var inode: UInt64
    }

    let chunkSize: Int
    /// Compressing threads: the last stretch of the stream is cut into pieces for all of them.
    let workers: Int
    private(set) var position: UInt64 = 0
    private(set) var fileBytes: UInt64 = 0
    /// The members stored so far, coded for the two index blocks as they come (``Recorded``), all
    /// but ``last``.
    private var recorded = Recorded()
    /// The newest member in stream order: held back, not yet coded, until its content has been
    /// stored and its checksum is known.
    private var last: ArchiveEntry?
    private var current: [UInt8]
    /// The last full chunk, held back until the next one fills or the stream ends, so that the
    /// final stretch (this chunk and the short one after it) can be cut for every worker.
    private var held: Chunk?
    private var nextSequence = 0
    /// Members that will not compress (``FileClass``), gathered apart from the rest and written as
    /// stored blocks of their own once ``apartLimit`` bytes are waiting; offsets relative to `apart`.
    private var apart: [UInt8] = []
    private var apartEntries: [ArchiveEntry] = []
    /// Whether the member being written goes to `apart`.
    private var writingApart = false
    /// Whether the content being written is x86 machine code (``markContentAsCode()``).
    private var writingCode = false
    /// How many bytes of ``current`` are x86 machine code.
    private var codeInCurrent = 0
    private var hardLinks: [FileIdentity: String] = [:]
    /// Every member's path (without a trailing `/`), and whether it is a folder.
    private var archivePaths: [ExactName: Bool] = [:]
    /// Every folder that some member's path passes through.
    private var parentPaths: Set<ExactName> = []

    /// Where each new chunk's array comes from: the pipeline gives them back once compressed.
    private let buffers: ByteArrayPool?

    init(chunkSize: Int, workers: Int = 1, buffers: ByteArrayPool? = nil) {
        self.chunkSize = chunkSize
        self.workers = max(1, workers)
        self.buffers = buffers
        self.current = ByteArrayPool.take(from: buffers, minimumCapacity: chunkSize)
    }

    /// An empty array for the next chunk.
    private func freshChunk() -> [UInt8] { ByteArrayPool.take(from: buffers, minimumCapacity: chunkSize) }

    /// Appends raw bytes, moving every chunk that fills up to `ready`.
    mutating func append(_ bytes: UnsafeRawBufferPointer, into ready: inout [Chunk]) {
        if writingApart {
            apart.append(contentsOf: bytes)
            return
        }
        var rest = bytes
        while !rest.isEmpty {
            let room = chunkSize - current.count
            let take = min(room, rest.count)
            current.append(contentsOf: UnsafeRawBufferPointer(rebasing: rest[..<take]))
            rest = UnsafeRawBufferPointer(rebasing: rest[take...])
            position += UInt64(take)
            if writingCode { codeInCurrent += take }
            if current.count == chunkSize { cut(into: &ready) }
        }
    }

    mutating func append(_ bytes: [UInt8], into ready: inout [Chunk]) {
        bytes.withUnsafeBytes { append($0, into: &ready) }
    }

    mutating func appendZeros(_ count: Int, into ready: inout [Chunk]) {
        guard count > 0 else { return }
        append([UInt8](repeating: 0, count: count), into: &ready)
    }

    private mutating func cut(into ready: inout [Chunk]) {
        let branch = branchForCurrent()
        var full = freshChunk()
        swap(&full, &current)
        emit(full, stored: false, branch: branch, into: &ready)
    }

    /// Marks the rest of the member being written as x86 machine code (the caller has seen its
    /// header, ``FileClass/isX86Code(_:)``). A chunk that is at least half code is compressed
    /// through the x86 branch filter; a member gathered apart is stored, so it is not counted.
    mutating func markContentAsCode() {
        if !writingApart { writingCode = true }
    }

    /// The filter for ``current`` as it is now, and the count starts again for the next chunk.
    private mutating func branchForCurrent() -> BranchFilter? {
        defer { codeInCurrent = 0 }
        return !current.isEmpty && codeInCurrent * 2 >= current.count ? .x86 : nil
    }

    /// Every chunk goes out through here, one behind: the newest is held for ``flushTail(into:)``.
    private mutating func emit(_ bytes: [UInt8], stored: Bool, branch: BranchFilter? = nil, into ready: inout [Chunk]) {
        if let previous = held { ready.append(previous) }
        held = Chunk(sequence: nextSequence, bytes: bytes, stored: stored, branch: branch)
        nextSequence += 1
    }

    /// Incompressible members wait apart until this many bytes have gathered (or the stream
    /// ends): each flush cuts the compressible chunk being filled short, so not too often; and
    /// what waits is memory, so not too much.
    var apartLimit: Int { chunkSize / 2 }

    /// Members whose size is at most this may be gathered apart: a larger one would hold too much
    /// memory while it waits.
    var apartMaxMember: UInt64 { UInt64(chunkSize / 2) }

    /// Writes the members gathered apart into the tar stream here, between two members: the
    /// compressible chunk being filled ends (short), and the gathered bytes follow as stored
    /// chunks. Their index entries take their place in stream order.
    private mutating func flushApart(into ready: inout [Chunk]) {
        guard !apart.isEmpty, !writingApart else { return }
        if !current.isEmpty {
            let branch = branchForCurrent()
            var partial = freshChunk()
            swap(&partial, &current)
            emit(partial, stored: false, branch: branch, into: &ready)
        }
        let base = position
        commitLast()
        for var entry in apartEntries {
            entry.headerOffset += base
            entry.dataOffset += base
            recorded.append(entry)
        }
        position += UInt64(apart.count)
        var start = 0
        while start < apart.count {
            let end = min(apart.count, start + chunkSize)
            emit(Array(apart[start..<end]), stored: true, into: &ready)
            start = end
        }
        apart = []
        apartEntries = []
    }

    /// The smallest piece the final stretch is cut into: below this, block overhead and the lost
    /// LZMA context cost more than an idle core does.
    static let minimumTailPiece = 1 << 20

    /// Hands out the final stretch: the held full chunk and the short one after it.
    ///
    /// With one worker they go out as they are. With several, a pack used to end with one core
    /// compressing the last full chunk while the others had nothing left (issue #12: 2 workers
    /// were 0.83 as efficient as one). The stretch is cut into `2 * workers` pieces of about equal
    /// size (about ``minimumTailPiece`` at least), so every worker has work until near the end and the
    /// last to finish is at most a small piece behind. An archive smaller than one chunk is not
    /// cut (it has no tail to balance), nor a stretch too short for more pieces than chunks.
    /// Blocks of unequal size are ordinary xz; readers take block boundaries from the xz Index.
    private mutating func flushTail(into ready: inout [Chunk]) {
        if let previous = held, !previous.stored {
            let whole = previous.bytes.count + current.count
            let pieces = min(2 * workers, whole / Self.minimumTailPiece)
            if pieces > (whole + chunkSize - 1) / chunkSize {
                held = nil
                nextSequence = previous.sequence
                // Pieces never straddle the two chunks, and each chunk is let go once cut: the
                // stretch is never copied whole, so the end of a pack does not hold it twice over.
                let firstPieces = current.isEmpty ? pieces : min(pieces - 1, max(1, pieces * previous.bytes.count / whole))
                let restBranch = branchForCurrent()
                let rest = current
                current = []
                split(previous.bytes, into: firstPieces, branch: previous.branch, ready: &ready)
                split(rest, into: pieces - firstPieces, branch: restBranch, ready: &ready)
                return
            }
        }
        // Nothing worth cutting: the held chunk and the short one go out as they are.
        if !current.isEmpty { cut(into: &ready) }
        flushHeld(into: &ready)
    }

    /// Cuts `bytes` into `pieces`, each compressed with the filter the whole was given: the
    /// code's share is not known per piece, and a piece is at least 1 MiB of the same stretch.
    private mutating func split(_ bytes: [UInt8], into pieces: Int, branch: BranchFilter?, ready: inout [Chunk]) {
        guard pieces > 0, !bytes.isEmpty else { return }
        let base = bytes.count / pieces
        let extra = bytes.count % pieces
        var start = 0
        for piece in 0..<pieces {
            let length = base + (piece < extra ? 1 : 0)
            ready.append(Chunk(sequence: nextSequence, bytes: Array(bytes[start..<start + length]), stored: false, branch: branch))
            nextSequence += 1
            start += length
        }
    }

    private mutating func flushHeld(into ready: inout [Chunk]) {
        if let previous = held {
            ready.append(previous)
            held = nil
        }
    }

    /// A pax global header at the very start, so a streaming reader knows the metadata before the
    /// first member.
    mutating func appendGlobalHeader(_ metadata: [String: String], into ready: inout [Chunk]) throws {
        guard !metadata.isEmpty else { return }
        let records = metadata.keys.sorted().map { (key: "AMK.\($0)", value: metadata[$0]!) }
        append(try TarEncoder.encodeGlobalHeader(records), into: &ready)
    }

    /// If `identity` was stored before as a regular file, the path to link to.
    func hardLinkTarget(for identity: FileIdentity) -> String? { hardLinks[identity] }

    mutating func rememberHardLink(_ identity: FileIdentity, path: String) { hardLinks[identity] = path }

    /// Whether an archive path is already taken; two members with one name would make extraction
    /// depend on order.
    func contains(archivePath: String) -> Bool { archivePaths[ExactName(archivePath)] != nil }

    /// Whether members stored so far lie under the folder `path` (without its trailing `/`).
    func holdsMembers(under path: String) -> Bool { parentPaths.contains(ExactName(path)) }

    /// Why a member at `path` (of `kind`) would make an archive no system can extract, or nil:
    /// a name component longer than a file name can be, a member under one that is not a
    /// folder, or one that is not a folder where others lie under it. Each of these was written
    /// (an extension appending `Documents/n`, then `Documents/n/child`), and amk, GNU tar and
    /// bsdtar all refused to extract the archive.
    func conflict(for path: String, kind: TarEntryKind) -> String? {
        let name = UTF8Bytes.droppingTrailingSlash(path)
        let bytes = name.utf8
        if kind != .directory, parentPaths.contains(ExactName(name)) {
            return "the archive already holds members under '\(name)', so it cannot be stored as anything but a folder"
        }
        // From the deepest folder up, until one that a member stored before passes through: that
        // member was checked, so every folder from there up is sound (one linear walk for a
        // folder's files, not one per file).
        var end = bytes.endIndex
        while true {
            let start = bytes[..<end].lastIndex(of: PathBytes.slash).map { bytes.index(after: $0) } ?? bytes.startIndex
            // Measured in the bytes the file system sees: a byte that is not UTF-8 is held as a
            // 4-byte escape (RawName), and a Latin-1 name of 64 characters read as 256 bytes was
            // refused, a legal tree that GNU tar archives.
            if bytes.distance(from: start, to: end) > Self.maxNameComponent,
                let component = String(bytes[start..<end]), RawName.encode(component).count > Self.maxNameComponent
            {
                let length = RawName.encode(component).count
                return "a name component of \(length) bytes is longer than the \(Self.maxNameComponent) bytes a file name can be"
            }
            guard start > bytes.startIndex else { return nil }
            let index = bytes.index(before: start)
            guard let parent = String(bytes[..<index]) else { return nil }
            let known = ExactName(parent)
            if parentPaths.contains(known) { return nil }
            if archivePaths[known] == false {
                return "'\(parent)' is already in the archive and is not a folder, so nothing can be stored under it"
            }
            end = index
        }
    }

    /// The longest name of one file or folder the systems we write for take (`NAME_MAX`).
    static let maxNameComponent = 255

    /// Encodes a member's headers and records it in the index. The content follows through
    /// `append`, then `endMember`.
    ///
    /// `incompressible` (a regular file the caller classified with ``FileClass``, no larger than
    /// ``apartMaxMember`` and not a hard link's target) sends the member apart: it joins the
    /// stream later, with others like it, in stored blocks. Stock tools do not mind the order:
    /// its folder is already in the stream, and no link points at it.
    mutating func beginMember(_ header: TarHeader, incompressible: Bool = false, into ready: inout [Chunk]) throws {
        var header = header
        if header.kind == .directory && !UTF8Bytes.endsWithSlash(header.path) { header.path += "/" }
        let encoded = try TarEncoder.encode(Self.tarHeader(for: header))
        // A pax header a reader would refuse (amk's limit; GNU tar has none) makes every
        // extraction stop at this member and lose the rest: refused here, before it is stored.
        // Only extended attributes can make one this large (names are limited on their own).
        let paxBytes = encoded.count - 2 * TarEncoder.blockSize
        let limit = TarParser.Limits().maxPaxHeaderSize
        if encoded.count > TarEncoder.blockSize, paxBytes > limit {
            let attributes = header.extendedAttributeList.reduce(0) { $0 + $1.name.utf8.count + $1.value.count }
            throw ArchiveError(
                .invalidArchivePath,
                "its pax header would be \(paxBytes) bytes (\(header.extendedAttributeList.count) extended attributes of "
                    + "\(attributes) bytes), more than the \(limit) bytes a reader accepts; pack it without --xattrs",
                member: header.path)
        }
        let goesApart = incompressible && header.kind == .regular && header.size <= apartMaxMember
        let entry = ArchiveEntry(
            path: header.path, kind: header.kind, size: header.size, mode: header.mode,
            uid: header.uid, gid: header.gid, mtime: header.mtime, linkTarget: header.linkTarget,
            headerOffset: goesApart ? UInt64(apart.count) : position,
            dataOffset: goesApart ? UInt64(apart.count + encoded.count) : position + UInt64(encoded.count),
            checksum: header.kind == .regular ? 0 : nil,
            hasPaxHeader: encoded.count > TarEncoder.blockSize)
        writingApart = goesApart
        writingCode = false
        append(encoded, into: &ready)
        let name = UTF8Bytes.droppingTrailingSlash(header.path)
        archivePaths[ExactName(name)] = header.kind == .directory
        for index in name.utf8.indices.reversed() where name.utf8[index] == PathBytes.slash {
            // Every folder above is in the set once its deepest one is: stop there.
            guard let parent = String(name.utf8[..<index]), parentPaths.insert(ExactName(parent)).inserted else { break }
        }
        if goesApart {
            apartEntries.append(entry)
        } else {
            commitLast()
            last = entry
        }
        fileBytes += header.size
    }

    /// What of a member's metadata goes into its tar header; the rest lives only in the rich index.
    ///
    /// This is the one place that decides when a member gets a pax `x` header. A pax header costs
    /// 1 KiB of tar stream per member (issue #12: the small-files archive was 1.11x xz's size
    /// because every member carried one for its nanosecond mtime). So the tar header gets the
    /// mtime in whole seconds, which ustar holds, and the nanoseconds stay in the index, from which
    /// amk restores them (``TarConsumer`` and ``MemberCursor`` hand the index's mtime to the
    /// extractor). Stock tools extract the same content, modes, links and second-precision times.
    /// Everything else is left to ``TarEncoder/encode(_:)``, which writes a pax record only for a
    /// value ustar cannot hold: a long or non-ASCII path or link target, a size of 8 GiB or more,
    /// a large uid or gid, a long or non-ASCII user or group name, a time outside ustar's range
    /// (kept whole, nanoseconds included, since the ustar field cannot carry it anyway). Whoever
    /// adds fields (xattrs, names) should add them here and keep that rule.
    static func tarHeader(for header: TarHeader) -> TarHeader {
        var tar = header
        if header.mtime.seconds >= 0, header.mtime.seconds <= 0o77777777777 {
            tar.mtime = TarTimestamp(seconds: header.mtime.seconds)
        }
        return tar
    }

    /// Whether the tar header's mtime is the one `tarHeader(for:)` writes for `indexed`: the same
    /// value, or its whole seconds.
    static func tarTime(_ tar: TarTimestamp, matches indexed: TarTimestamp) -> Bool {
        tar == indexed || tar == TarTimestamp(seconds: indexed.seconds)
    }

    /// Pads the content to a 512-byte boundary and records its checksum.
    mutating func endMember(checksum: UInt64, into ready: inout [Chunk]) {
        writingCode = false
        if writingApart {
            guard let last = apartEntries.indices.last else { return }
            apartEntries[last].checksum = checksum
            appendZeros(TarEncoder.padding(forContentSize: apartEntries[last].size), into: &ready)
            writingApart = false
            if apart.count >= apartLimit { flushApart(into: &ready) }
            return
        }
        guard var member = last else { return }
        if member.kind == .regular { member.checksum = checksum }
        last = member
        appendZeros(TarEncoder.padding(forContentSize: member.size), into: &ready)
    }

    /// Codes the held-back member into ``recorded``.
    private mutating func commitLast() {
        if let member = last { recorded.append(member) }
        last = nil
    }

    /// Members stored so far, those still waiting apart included.
    var memberCount: Int { recorded.count + (last == nil ? 0 : 1) + apartEntries.count }

    /// The end-of-archive marker and the last, short chunk. Returns what the index blocks are
    /// made of: every member, coded.
    mutating func finish(into ready: inout [Chunk]) -> Recorded {
        flushApart(into: &ready)
        commitLast()
        append(TarEncoder.endOfArchive, into: &ready)
        flushTail(into: &ready)
        recorded.tarSize = position
        return recorded
    }

    /// The members of a stream, coded for the rich index and pixz's index as they were stored.
    struct Recorded: Sendable {
        private(set) var sections = ArchiveIndex.MemberSections()
        private(set) var pixz = PixzIndex.Builder()
        /// The length of the tar stream, end-of-archive marker included, once it has ended.
        fileprivate(set) var tarSize: UInt64 = 0

        var count: Int { sections.count }

        fileprivate mutating func append(_ entry: ArchiveEntry) {
            sections.append(entry)
            pixz.append(entry)
        }

        /// The rich index's payload.
        func richIndex(chunkSize: UInt64, metadata: [String: String]) -> [UInt8] {
            ArchiveIndex.encodedVersion2(sections, tarSize: tarSize, chunkSize: chunkSize, metadata: metadata)
        }

        /// pixz's index's payload.
        func pixzIndex() -> [UInt8] { pixz.finished(tarSize: tarSize) }
    }
}
