import Tar
import XZ

/// The decompressed tar stream's one reader: it parses the stream, keeps the archive's
/// metadata, and hands each member to the parts a reading has set (TarSinks.swift): checking against
/// the index, listing, extraction, capturing one member, keeping what follows the end marker.
///
/// It lives in one job on a thread of our own for the whole reading (``ConsumerJob``), which makes,
/// feeds and finishes it: no lock, and the files it writes are written from that thread alone.
struct TarConsumer {
    var parser = TarParser()
    /// Each member held to the rich index, when the archive has one.
    var conformance: IndexConformance?
    /// Members seen, when listing.
    var listing: MemberListing?
    /// Members written, when extracting.
    var extraction: ExtractionSink?
    /// One member's content, for a sequential read of it.
    var capture: MemberCapture?
    /// What follows the end marker, for a streamed archive's index blocks.
    var trailing: TrailingBytes?
    /// Called with the decompressed bytes consumed so far, after each piece (a progress bar).
    var onProgress: (@Sendable (UInt64) -> Void)?

    private(set) var metadata: [String: String] = [:]
    private(set) var members = 0
    /// Whether a member was refused for disagreeing with the index (``conformance``): where the
    /// blocks' checks held, the index is then what is wrong, and its offsets lead nowhere safe.
    private(set) var indexDisagreed = false
    private var current: TarMember?
    /// CRC64 of the current member's content, when a part needs it.
    private var checksum: UInt64 = 0
    private(set) var endOffset: UInt64?
    /// Bytes of the decompressed stream consumed so far.
    private(set) var streamPosition: UInt64 = 0
    /// Where the current member's bytes end so far in the stream: its headers, then its content.
    private var reach: UInt64 = 0

    init(
        conformance: IndexConformance? = nil, listing: MemberListing? = nil, extraction: ExtractionSink? = nil,
        capture: MemberCapture? = nil
    ) {
        self.conformance = conformance
        self.listing = listing
        self.extraction = extraction
        self.capture = capture
    }

    /// Checked against `expected` (when the archive has an index), extracting through
    /// `extractor` the members `filter` selects: a full or selected extraction, or (without an
    /// extractor) a verification.
    init(expected: [ArchiveEntry]?, extractor: Extractor? = nil, filter: MemberFilter? = nil) {
        self.init(conformance: expected.map(IndexConformance.init), extraction: extractor.map { ExtractionSink($0, filter: filter) })
    }

    /// The extractor, when extracting.
    var extractor: Extractor? { extraction?.extractor }
    /// The members listed so far, when listing.
    var collected: [ArchiveEntry]? { listing?.entries }

    mutating func consume(_ bytes: UnsafeRawBufferPointer) throws {
        var parser = self.parser
        defer { self.parser = parser }
        try parser.consume(bytes) { event in try handle(event) }
        let start = streamPosition
        streamPosition += UInt64(bytes.count)
        onProgress?(streamPosition)
        if trailing != nil, let end = endOffset {
            try trailing!.keep(bytes, at: start, from: end + UInt64(TarEncoder.endOfArchive.count))
        }
    }

    /// Consumes `bytes`, the next of the stream, of which those before stream offset
    /// `verifiedThrough` have passed their integrity checks: the members made from them stay,
    /// whatever happens after, and those made from later bytes are removed should the reading
    /// fail before they are verified (``Extractor/verified(through:)``). Readers whose bytes are
    /// all verified before they come use ``consume(_:)``.
    mutating func consume(_ bytes: UnsafeRawBufferPointer, verifiedThrough: UInt64) throws {
        extraction?.extractor.verified(through: verifiedThrough)
        try consume(bytes)
    }

    mutating func finish(requireEndMarker: Bool = true) throws {
        try parser.finish(requireEndMarker: requireEndMarker)
        try conformance?.finish()
        try extraction?.extractor.finish()
    }

    /// Whether `path` is a member of `filter` (with or without a directory's trailing `/`) or
    /// lies under one of its directories; nil selects everything.
    static func selected(_ path: String, by filter: MemberFilter?) -> Bool {
        filter?.selects(path) ?? true
    }

    /// Calls `body` with `path` (without a folder's trailing `/`), then each folder above it,
    /// nearest first, while `body` returns true.
    static func forEachAncestor(of path: String, _ body: (String) -> Bool) {
        let slash = UInt8(ascii: "/")
        var name = path.utf8[...]
        if name.last == slash { name = name.dropLast() }
        while body(String(decoding: name, as: UTF8.self)), let cut = name.lastIndex(of: slash) {
            name = name[..<cut]
        }
    }

    /// The most archive metadata a reader keeps from pax global headers: keys (without `AMK.`)
    /// and their values' bytes. The packer refuses more, rather than write an unreadable archive.
    static let maxMetadataKeys = 256
    static let maxMetadataBytes = 64 * 1024

    /// Up to this many members, a selection is matched byte by byte against each path.
    static let fewMembers = 16

    private var wantsChecksum: Bool { conformance != nil || listing?.checksums == true }

    private mutating func handle(_ event: TarParser.Event) throws {
        switch event {
        case .globalHeader(let records, let offset):
            // Every global header may add keys, and a stream may hold any number of them: a
            // small archive could make us keep gigabytes (DESIGN §6). What is kept is bounded
            // far above what a writer puts there (a handful of short values).
            let maxKeys = Self.maxMetadataKeys
            let maxBytes = Self.maxMetadataBytes
            var kept = metadata.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
            // The prefix is matched and cut as bytes: a key whose first character is a combining
            // mark makes one `Character` of it and the dot, which `hasPrefix` would not match.
            for record in records where record.key.utf8.starts(with: "AMK.".utf8) {
                let key = String(decoding: record.key.utf8.dropFirst(4), as: UTF8.self)
                kept += key.utf8.count + record.value.utf8.count - (metadata[key].map { key.utf8.count + $0.utf8.count } ?? 0)
                guard kept <= maxBytes, metadata[key] != nil || metadata.count < maxKeys else {
                    throw ArchiveError(
                        .limitExceeded,
                        "pax global headers carry more archive metadata than the limit "
                            + "(\(maxKeys) keys, \(maxBytes) bytes in total), at tar offset \(offset)")
                }
                // A later header may set a key again (the last value wins), but only with the same
                // bytes: `String` keys compare by canonical equivalence, and two keys that differ
                // in bytes would otherwise show as one, with one of the two values.
                if let existing = metadata.index(forKey: key), !UTF8Bytes.equal(metadata.keys[existing], key) {
                    throw ArchiveError(
                        .corrupt,
                        "pax global headers set metadata keys '\(TerminalSafe.name(metadata.keys[existing]))' and "
                            + "'\(TerminalSafe.name(key))', different bytes that read as one key, at tar offset \(offset)")
                }
                metadata[key] = record.value
            }
        case .member(let member):
            current = member
            reach = member.dataOffset
            checksum = 0
            members += 1
            let indexed: ArchiveEntry?
            do {
                indexed = try conformance?.begin(member)
            } catch {
                indexDisagreed = true
                throw error
            }
            listing?.begin(member)
            capture?.begin(member.header)
            try extraction?.begin(member.header, indexed: indexed, isSparse: member.isSparse)
        case .data(let bytes, let offset):
            reach = offset + UInt64(bytes.count)
            if wantsChecksum { checksum = CRC.crc64(bytes, previous: checksum) }
            try capture?.write(bytes)
            try extraction?.write(bytes)
        case .hole(let length):
            // No checksum: a sparse member is refused where one is checked (IndexConformance),
            // and a listing keeps none for it.
            try capture?.writeZeros(length)
            try extraction?.writeHole(length)
        case .memberEnd:
            if let member = current {
                do {
                    try conformance?.end(member, checksum: checksum)
                } catch {
                    indexDisagreed = true
                    throw error
                }
                try listing?.end(member, checksum: checksum)
            }
            try extraction?.end(reach: reach)
            capture?.end()
            current = nil
        case .end(let offset):
            endOffset = offset
            if trailing != nil, let listing {
                trailing!.bound = TrailingBytes.indexBound(members: listing.count, nameBytes: listing.nameBytes)
            }
        }
    }

    /// The member the stream stopped inside, if any.
    var unfinishedMember: String? { current?.header.path }
}
