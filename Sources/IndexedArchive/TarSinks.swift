import Tar
import XZ

// The small parts a ``TarConsumer`` is made of: each one does one thing with the members that pass,
// and a reading sets only those it needs.

/// Holds each member to the rich index: the header to its entry, the content to its checksum,
/// and the count to the index's.
struct IndexConformance {
    let expected: [ArchiveEntry]
    private(set) var next = 0

    init(_ expected: [ArchiveEntry]) {
        self.expected = expected
    }

    /// Checks `member` against the next entry and returns that entry: its mtime has the
    /// nanoseconds the tar header lacks.
    mutating func begin(_ member: TarMember) throws(ArchiveError) -> ArchiveEntry {
        guard next < expected.count else {
            throw ArchiveError(.corrupt, "member is not in the index", member: member.header.path, offset: member.headerOffset)
        }
        guard !member.isSparse else { throw Self.sparse(member) }
        let entry = expected[next]
        let header = member.header
        let disagreement =
            entry.headerOffset != member.headerOffset
            ? "the member starts at offset \(member.headerOffset), the index says \(entry.headerOffset)"
            : entry.dataOffset != member.dataOffset
                ? "its data starts at offset \(member.dataOffset), the index says \(entry.dataOffset)"
                : entry.disagreement(with: header)
        if let disagreement {
            throw ArchiveError(
                .corrupt, "tar header disagrees with the index entry for '\(entry.path)': \(disagreement)",
                member: header.path, offset: member.headerOffset)
        }
        return entry
    }

    /// Checks the content's checksum (`checksum`, CRC64) of the member begun last.
    mutating func end(_ member: TarMember, checksum: UInt64) throws(ArchiveError) {
        let entry = expected[next]
        if entry.kind == .regular, let sum = entry.checksum, sum != checksum {
            throw ArchiveError(
                .checksumMismatch,
                "content checksum mismatch (index \(String(sum, radix: 16)), data \(String(checksum, radix: 16)))",
                member: member.header.path, offset: member.dataOffset)
        }
        next += 1
    }

    /// The refusal of a sparse member in an archive with our index: we never write one, and the
    /// index locates content by offset, which a sparse member's is not.
    static func sparse(_ member: TarMember) -> ArchiveError {
        ArchiveError(
            .corrupt, "a sparse member in an archive with an amk index, which never holds one",
            member: member.header.path, offset: member.headerOffset)
    }

    /// Every entry of the index must have been seen.
    func finish() throws(ArchiveError) {
        guard next == expected.count else {
            throw ArchiveError(.corrupt, "the index lists \(expected.count) members but the tar stream has \(next)")
        }
    }
}

/// The members seen, as index entries (with `keepsEntries`); with `checksums`, each regular
/// member's CRC64 too, and the ``MemberFingerprints`` that a stream's index, which arrives only
/// after its members, is checked against.
struct MemberListing {
    private(set) var entries: [ArchiveEntry] = []
    let checksums: Bool
    /// Whether ``entries`` keeps every member. A stream's extraction keeps none: what it holds
    /// then does not grow with the members (the fingerprints are bounded).
    let keepsEntries: Bool
    private(set) var fingerprints = MemberFingerprints()
    /// Members seen.
    private(set) var count = 0
    /// Bytes of the members' paths and link targets, for the bound on the index that may follow.
    private(set) var nameBytes = 0
    /// The first sparse member seen: a stream's index, if one follows, is refused for it.
    private(set) var firstSparse: TarMember?
    /// The member begun last, until its end.
    private var current: ArchiveEntry?
    /// Given each member once its content has been read (with its checksum, with `checksums`):
    /// a listing printed as the members come. What it throws ends the reading.
    let onMember: (@Sendable (ArchiveEntry) throws -> Void)?

    init(checksums: Bool = false, keepsEntries: Bool = true, onMember: (@Sendable (ArchiveEntry) throws -> Void)? = nil) {
        self.checksums = checksums
        self.keepsEntries = keepsEntries
        self.onMember = onMember
    }

    mutating func begin(_ member: TarMember) {
        if member.isSparse && firstSparse == nil { firstSparse = member }
        let header = member.header
        let entry = ArchiveEntry(
            path: header.path, kind: header.kind, size: header.size, mode: header.mode,
            uid: header.uid, gid: header.gid, mtime: header.mtime,
            linkTarget: header.linkTarget, headerOffset: member.headerOffset, dataOffset: member.dataOffset,
            checksum: nil, hasPaxHeader: member.hasPaxHeader)
        count += 1
        nameBytes &+= header.path.utf8.count &+ (header.linkTarget?.utf8.count ?? 0)
        if keepsEntries { entries.append(entry) }
        current = entry
    }

    mutating func end(_ member: TarMember, checksum: UInt64) throws {
        guard var entry = current else { return }
        current = nil
        if checksums {
            if member.header.kind == .regular, !member.isSparse {
                entry.checksum = checksum
                if keepsEntries, let last = entries.indices.last { entries[last].checksum = checksum }
            }
            fingerprints.add(entry)
        }
        try onMember?(entry)
    }

    /// Forgets the last member, which the damage cut (salvage).
    mutating func dropLast(ifNamed path: String?) {
        if let path, let last = entries.last, UTF8Bytes.equal(last.path, path) { entries.removeLast() }
    }
}

/// Writes the selected members (all, without a selection) through an ``Extractor``.
struct ExtractionSink {
    let extractor: Extractor
    /// Members to extract; nil means all.
    let filter: MemberFilter?
    /// Selected links whose target is not selected (indexed archives only).
    let standIns: HardLinkStandIns
    private var writing = false

    init(_ extractor: Extractor, filter: MemberFilter?, standIns: HardLinkStandIns = HardLinkStandIns()) {
        self.extractor = extractor
        self.filter = filter
        self.standIns = standIns
    }

    /// Starts `header`'s member if it is selected; `indexed` is its index entry, whose mtime
    /// has the nanoseconds the tar header lacks.
    mutating func begin(_ header: TarHeader, indexed: ArchiveEntry?, isSparse: Bool = false) throws(ArchiveError) {
        writing = TarConsumer.selected(header.path, by: filter)
        var header = header
        if let indexed, !standIns.isEmpty {
            writing = standIns.extracts(at: indexed.headerOffset, selected: writing)
            standIns.apply(to: &header, at: indexed.headerOffset)
        }
        guard writing else { return }
        if let indexed { header.mtime = indexed.mtime }
        try extractor.begin(header, isSparse: isSparse)
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws(ArchiveError) {
        if writing { try extractor.write(bytes) }
    }

    func writeHole(_ length: UInt64) throws(ArchiveError) {
        if writing { try extractor.writeHole(length) }
    }

    /// Ends the member, whose bytes end at stream offset `reach`.
    mutating func end(reach: UInt64) throws(ArchiveError) {
        if writing {
            try extractor.endMember()
            extractor.settle(reach: reach)
        }
        writing = false
    }
}

/// Keeps the content of the first member named `name` (a sequential read of one member), up
/// to `limit` bytes.
struct MemberCapture {
    let name: String
    let limit: Int
    private(set) var bytes: [UInt8]?
    private var capturing = false
    /// The member has been read to its end.
    private(set) var isDone = false

    init(_ name: String, limit: Int) {
        self.name = name
        self.limit = limit
    }

    mutating func begin(_ header: TarHeader) {
        guard bytes == nil, UTF8Bytes.equal(UTF8Bytes.droppingTrailingSlash(header.path), name) else { return }
        capturing = true
        bytes = []
    }

    mutating func write(_ data: UnsafeRawBufferPointer) throws(ArchiveError) {
        guard capturing else { return }
        guard bytes!.count + data.count <= limit else {
            throw ArchiveError(.limitExceeded, "member is over the limit of \(limit) bytes", member: name)
        }
        bytes!.append(contentsOf: data)
    }

    /// A sparse member's hole, as the zeros it stands for.
    mutating func writeZeros(_ count: UInt64) throws(ArchiveError) {
        guard capturing else { return }
        guard count <= UInt64(limit - bytes!.count) else {
            throw ArchiveError(.limitExceeded, "member is over the limit of \(limit) bytes", member: name)
        }
        bytes!.append(contentsOf: repeatElement(0, count: Int(count)))
    }

    mutating func end() {
        guard capturing else { return }
        capturing = false
        isDone = true
    }
}

/// The bytes after the end-of-archive marker (our index blocks, in a streamed archive), kept while
/// they can be an index, and up to `limit` and ``bound``.
///
/// Only an index is worth keeping: bytes that do not start with its magic (a foreign archive's
/// zero padding, or anything a hostile stream appends) are dropped as they come, and an index is
/// held to what one of the members seen can take. A 3 MB stream of one member followed by 1.2 GiB
/// of filler once made a receiver hold 2 GB, within the allowance proportional to the stream.
struct TrailingBytes {
    var limit: Int
    /// What an index of the members the stream held can take (``indexBound(members:nameBytes:)``), once the tar
    /// stream has ended; no bound before.
    var bound: Int = .max
    private(set) var bytes: [UInt8] = []
    /// How much of the index's magic ended the bytes searched so far, before the index is found.
    private var partial = 0
    /// Whether bytes other than zero blocks came between the end marker and the index: amk writes
    /// none there, and an "index" found behind them may be any bytes a tar ignores (see
    /// `ArchiveStreamReader.verifiedIndex`).
    private(set) var followsOtherBytes = false
    /// All the bytes that followed the tar stream, kept or not: what ``limit`` and ``bound`` hold.
    private var seen = 0
    /// The index's length, once its header has arrived: what comes after it (pixz's index, about
    /// as large again) counts against the limits but is not kept.
    private var declared: Int?
    /// The stream offset of the index's first byte, once it has come.
    private(set) var indexStart: UInt64?

    init(limit: Int) {
        self.limit = limit
    }

    /// Keeps what of `piece` (which starts at stream offset `start`) lies from `from` on.
    mutating func keep(_ piece: UnsafeRawBufferPointer, at start: UInt64, from: UInt64) throws(ArchiveError) {
        let end = start + UInt64(piece.count)
        guard end > from else { return }
        var skip = Int(max(start, from) - start)
        if indexStart == nil {
            // What lies between the end marker and the index is passed over, neither kept nor
            // counted: zero blocks (a tar's record padding, where amk writes the index after
            // them), and anything else, which tar ignores after the end marker but a reading of
            // the file holds to the index (members hidden there, listed by the index, were
            // found by the file's reading and passed by a pipe's, whose index went unchecked).
            guard let found = search(piece, from: skip, at: start) else { return }
            skip = found
        }
        let most = min(limit, bound)
        let arriving = piece.count - skip
        guard seen + arriving <= most else {
            throw ArchiveError(.limitExceeded, "more than \(most) bytes of index follow the tar stream", offset: from)
        }
        seen += arriving
        let room = declared.map { max(0, $0 - bytes.count) } ?? arriving
        bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: piece[skip..<skip + min(arriving, room)]))
        if declared == nil, bytes.count >= ArchiveIndex.headerSize,
            let header = try? ArchiveIndex.header(bytes, maxEntries: .max, archiveSize: nil, blockOffset: nil),
            header.byteCount <= UInt64(most)
        {
            // A header that does not hold up keeps everything, for the decoding to refuse.
            declared = Int(header.byteCount)
            if bytes.count > declared! { bytes.removeLast(bytes.count - declared!) }
        }
    }

    /// Looks for the index's magic in `piece` (at stream offset `start`) from `skip` on, carrying
    /// a part of it that ends one piece into the next. Returns where in `piece` the rest of the
    /// index begins once the magic is found (its start is then ``indexStart``, and the part of it
    /// in earlier pieces is in ``bytes``); nil while it is not.
    private mutating func search(_ piece: UnsafeRawBufferPointer, from skip: Int, at start: UInt64) -> Int? {
        let magic = ArchiveIndex.magic
        var position = skip
        if partial > 0 {
            let available = min(magic.count - partial, piece.count - position)
            if magic[partial..<partial + available].elementsEqual(piece[position..<position + available]) {
                guard partial + available == magic.count else {
                    partial += available
                    return nil
                }
                indexStart = start + UInt64(position) - UInt64(partial)
                bytes = Array(magic[..<partial])
                // Those bytes count against the limits as the rest of the index does.
                seen = partial
                partial = 0
                return position
            }
            // The magic's first byte appears in it only once: no later start within the part.
            partial = 0
            followsOtherBytes = true
        }
        while position < piece.count {
            guard let first = piece[position...].firstIndex(of: magic[0]) else {
                passOver(piece[position...])
                return nil
            }
            passOver(piece[position..<first])
            let available = min(magic.count, piece.count - first)
            if magic[..<available].elementsEqual(piece[first..<first + available]) {
                guard available == magic.count else {
                    partial = available
                    return nil
                }
                indexStart = start + UInt64(first)
                return first
            }
            followsOtherBytes = true
            position = first + 1
        }
        return nil
    }

    /// Notes bytes passed over on the way to the index that are not zero blocks' zeros.
    private mutating func passOver(_ bytes: Slice<UnsafeRawBufferPointer>) {
        if !followsOtherBytes, bytes.contains(where: { $0 != 0 }) { followsOtherBytes = true }
    }

    /// The most bytes an index of `entries` (and pixz's after it) can take: each member's path
    /// and link target, and fewer than 256 bytes of fixed fields in either layout; twice that, for
    /// sections a later minor version may add, and 1 MiB for the header and the metadata.
    static func indexBound(members: Int, nameBytes: Int) -> Int {
        let total = nameBytes &+ members &* 256
        return (1 << 20) &+ 2 &* total
    }
}
