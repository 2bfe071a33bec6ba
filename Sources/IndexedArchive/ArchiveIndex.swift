import Tar

/// The rich index: every member's place and metadata, and the archive's metadata, in one block
/// after the tar stream, so a reader lists an archive and finds any member without decompressing
/// data.
///
/// Version 2 (written since issue #12's listing work; all integers little-endian, `varint` is
/// unsigned LEB128 of at most 10 bytes, `zigzag` maps a signed value to an unsigned one):
/// ```
/// header, 96 bytes
///   0  [8] "AMKINDEX"          8 u16 major (2)  10 u16 minor  12 u32 header size H (96)
///   16 u64 entry count N      24 u64 tar size T             32 u64 chunk size C
///   40 u64 names size         48 u64 places size            56 u64 attributes size
///   64 u64 checksums size     72 u64 metadata size          80 u8 checksum kind (1 = CRC64)
///   81 [15] 0
/// H bytes of header, then five sections, each member's fields in tar order:
/// names       varint bytes shared with the previous member's path, varint length of the rest,
///             the rest (UTF-8)
/// places      u8 typeflag, u8 flags (bit 0: pax header), varint header offset minus the previous
///             member's, varint data offset minus header offset minus 512, varint size
/// attributes  varint zigzag(mtime seconds minus the previous member's), varint nanoseconds,
///             varint mode, varint uid, varint gid, varint link target length, link target
/// checksums   u64 CRC64 of each regular file's content
/// metadata    per pair u32 key length, key, u32 value length, value
/// ```
/// The names come first and alone, so a listing decodes the header and that section and stops:
/// on a real tree of 13,890 members they are 7% of the index. Sorted paths share most of their
/// bytes with the previous one, and the offsets grow by small steps, so the index is a quarter of
/// version 1's size before compression and decodes in well under half the time.
///
/// Version 1, which archives written before read with, is a 64-byte header and fixed 96-byte
/// records; see ``ArchiveIndex/decode(_:maxEntries:archiveSize:blockOffset:maxNameBytes:)``.
/// Later minor versions may lengthen the header and append sections after the metadata; an
/// unknown major version is refused.
public struct ArchiveIndex: Sendable {
    /// The 8 bytes that open the index: `AMKINDEX`.
    public static let magic: [UInt8] = Array("AMKINDEX".utf8)
    /// The layout's major version written: a reader refuses an index of a major version it does
    /// not know (this one reads 1 and 2).
    public static let majorVersion: UInt16 = 2
    /// The layout's minor version: later minors only append fields, which older readers skip.
    public static let minorVersion: UInt16 = 0
    /// Bytes a reader decodes first: enough for the header of either version.
    static let headerSize = 96
    static let checksumCRC64: UInt8 = 1

    /// Every member, in tar order.
    public var entries: [ArchiveEntry]
    /// Length of the tar stream, end marker included.
    public var tarSize: UInt64
    /// Uncompressed bytes per data block.
    public var chunkSize: UInt64
    /// The archive's metadata (the same pairs as its pax global header).
    public var metadata: [String: String]

    /// An index of `entries` for a tar stream of `tarSize` bytes cut into `chunkSize`-byte blocks.
    public init(entries: [ArchiveEntry], tarSize: UInt64, chunkSize: UInt64, metadata: [String: String]) {
        self.entries = entries
        self.tarSize = tarSize
        self.chunkSize = chunkSize
        self.metadata = metadata
    }

    /// The block payload, in the current layout (version 2).
    public func encoded() -> [UInt8] {
        encodedVersion2()
    }

    /// Whether a block payload starts like a rich index.
    public static func hasMagic(_ bytes: some Collection<UInt8>) -> Bool {
        bytes.starts(with: magic)
    }

    /// The fewest compressed bytes of archive a member is allowed. Measured with `amk pack`: the
    /// cheapest members there are, empty files with short names, cost 8.9 bytes each at the
    /// default preset (10,000 of them in an 88,724-byte archive) and 8.0 at preset 9 (100,000 in
    /// 799,436 bytes), tar header, index record and pixz entry together. One byte per member
    /// leaves a margin of eight, and keeps an index of millions of records compressed to a few
    /// hundred kilobytes (each record costs 200 bytes of memory once decoded) from being believed.
    public static let minimumArchiveBytesPerEntry: UInt64 = 1
    /// The longest path or link target a record may name, as the tar parser's limit.
    public static let maxNameLength = 64 * 1024

    /// What the header of an index promises, checked before anything it describes is decoded or
    /// allocated.
    struct Header {
        var major: UInt16
        var count: Int
        var tarSize: UInt64
        var chunkSize: UInt64
        /// Everything the index needs: header, sections and metadata. Later minor versions may
        /// append more after them.
        var byteCount: UInt64
        /// What a reader of the paths alone needs: the header and the names (version 2), or the
        /// whole index (version 1, whose names come after the records).
        var pathsByteCount: UInt64
        /// Version 1: the size of a record, the string heap and the metadata.
        var recordSize = 0
        var heapSize: UInt64 = 0
        /// Where the metadata starts and how long it is.
        var metadataSize: UInt64 = 0
        /// Version 2: the header's length and the sections' sizes, in order.
        var headerLength = 0
        var sections = Version2Sections()
    }

    /// Reads and checks the header at the start of `bytes` (which may hold more).
    ///
    /// The entry count is held to `maxEntries`, to what the tar stream can hold (every member
    /// takes a 512-byte header block) and, when `archiveSize` is given, to one member per
    /// ``minimumArchiveBytesPerEntry`` bytes of archive; then to what the sizes the header gives
    /// can hold. The sizes are added with overflow checks.
    static func header(_ bytes: [UInt8], maxEntries: Int, archiveSize: UInt64?, blockOffset: UInt64?) throws(ArchiveError) -> Header {
        guard bytes.count >= 16, hasMagic(bytes) else { throw corrupt("missing AMKINDEX magic", blockOffset) }
        let major: UInt16 = bytes.loadLE(at: 8)
        guard major == 1 || major == 2 else {
            throw ArchiveError(
                .unsupportedVersion,
                "archive index version \(major).\(bytes.loadLE(at: 10) as UInt16) is not supported (this reader knows 1.x and 2.x)",
                offset: blockOffset)
        }
        guard bytes.count >= (major == 1 ? 64 : headerSize) else { throw corrupt("the header is cut short", blockOffset) }
        let count: UInt64 = bytes.loadLE(at: 16)
        let tarSize: UInt64 = bytes.loadLE(at: 24)
        guard count <= UInt64(max(0, maxEntries)) else {
            throw ArchiveError(
                .limitExceeded, "archive index lists \(count) entries, more than the limit of \(maxEntries)", offset: blockOffset)
        }
        guard count <= tarSize / 512 else {
            throw corrupt("\(count) entries cannot fit in a tar stream of \(tarSize) bytes (each needs a 512-byte header)", blockOffset)
        }
        if let archiveSize, count > archiveSize / minimumArchiveBytesPerEntry {
            throw ArchiveError(
                .limitExceeded,
                "archive index lists \(count) entries, more than an archive of \(archiveSize) bytes can hold",
                offset: blockOffset)
        }
        // count <= maxEntries fits in an Int.
        let chunkSize: UInt64 = bytes.loadLE(at: 32)
        return major == 1
            ? try version1Header(bytes, count: Int(count), tarSize: tarSize, chunkSize: chunkSize, blockOffset: blockOffset)
            : try version2Header(bytes, count: Int(count), tarSize: tarSize, chunkSize: chunkSize, blockOffset: blockOffset)
    }

    /// Decodes and validates a block payload of either version. Every count, offset and length is
    /// checked against the payload's size and the limits (the header is checked first), and the
    /// names the members carry may not add up to more than `maxNameBytes` or the tar stream (which
    /// holds every one of them in full), so a lying index cannot crash or exhaust memory. Paths
    /// and link targets must be UTF-8 without NUL bytes, as the tar parser makes them.
    /// - Parameters:
    ///   - bytes: the index block's decompressed payload.
    ///   - maxEntries: refuse an index listing more members.
    ///   - archiveSize: the size of the archive file (or of the compressed stream read so far),
    ///     which bounds the entry count; nil skips that bound.
    ///   - blockOffset: where the index block is in the file, for error messages.
    ///   - maxNameBytes: refuse an index whose paths and link targets, written out, take more
    ///     bytes; nil allows ``ArchiveReader/indexAllowance(fileSize:)`` of the payload's size.
    /// - Throws: ``ArchiveError`` `.corrupt` for an index that contradicts itself or its limits
    ///   of size, `.limitExceeded` past `maxEntries`, `archiveSize` or `maxNameBytes`,
    ///   `.unsupportedVersion` for a major version other than 1 and 2.
    public static func decode(
        _ bytes: [UInt8], maxEntries: Int = 10_000_000, archiveSize: UInt64? = nil,
        blockOffset: UInt64? = nil, maxNameBytes: Int? = nil
    ) throws(ArchiveError) -> ArchiveIndex {
        try decode(
            bytes, maxEntries: maxEntries, archiveSize: archiveSize, blockOffset: blockOffset, maxNameBytes: maxNameBytes, keeping: nil
        )
        .index
    }

    /// ``decode(_:maxEntries:archiveSize:blockOffset:maxNameBytes:)``, keeping as entries only the
    /// members whose stored path `keep` accepts, when the layout allows it (version 2; a version 1
    /// index is decoded whole). Returns whether `keep` was applied. `visit` is given every
    /// member's entry in order, kept or not: with a `keep` that keeps none, the members are seen
    /// one at a time and never held together (but for a version 1 index).
    static func decode(
        _ bytes: [UInt8], maxEntries: Int = 10_000_000, archiveSize: UInt64? = nil,
        blockOffset: UInt64? = nil, maxNameBytes: Int? = nil, keeping keep: ((ArraySlice<UInt8>) -> Bool)? = nil,
        visiting visit: ((ArchiveEntry) throws(ArchiveError) -> Void)? = nil
    ) throws(ArchiveError) -> (index: ArchiveIndex, kept: Bool) {
        let header = try header(bytes, maxEntries: maxEntries, archiveSize: archiveSize, blockOffset: blockOffset)
        guard header.byteCount <= UInt64(bytes.count) else {
            throw corrupt("sizes in the header exceed the block (\(bytes.count) bytes)", blockOffset)
        }
        let nameLimit = maxNameBytes ?? ArchiveReader.indexAllowance(fileSize: UInt64(bytes.count))
        if header.major == 1 {
            let index = try decodeVersion1(bytes, header: header, blockOffset: blockOffset)
            if let visit { for entry in index.entries { try visit(entry) } }
            return (index, false)
        }
        let index = try decodeVersion2(
            bytes, header: header, blockOffset: blockOffset, maxNameBytes: nameLimit, keeping: keep, visiting: visit)
        return (index, keep != nil)
    }

    /// The members' paths alone, in tar order, from the first bytes of a payload: for version 2
    /// the header and the names section (``Header/pathsByteCount``), for version 1 all of it.
    /// The same checks as ``decode(_:maxEntries:archiveSize:blockOffset:maxNameBytes:)`` apply to
    /// what is read; the sections after the names are not looked at.
    static func decodePaths(
        _ bytes: [UInt8], header: Header, blockOffset: UInt64?, maxNameBytes: Int
    ) throws(ArchiveError) -> MemberPathList {
        guard header.pathsByteCount <= UInt64(bytes.count) else {
            throw corrupt("sizes in the header exceed the block (\(bytes.count) bytes)", blockOffset)
        }
        if header.major == 1 {
            return MemberPathList(try decodeVersion1(bytes, header: header, blockOffset: blockOffset).entries.map(\.path))
        }
        var names = IndexCursor(
            bytes, from: header.headerLength, count: Int(header.sections.names), section: "names", blockOffset: blockOffset)
        var budget = NameBudget(maxNameBytes: maxNameBytes, tarSize: header.tarSize)
        return try decodeNames(&names, count: header.count, budget: &budget)
    }

    /// Where a member's content ends in the tar stream, padded to a whole block: the next
    /// member's headers cannot begin before it. Saturates rather than wrapping.
    static func paddedEnd(dataOffset: UInt64, size: UInt64) -> UInt64 {
        let (end, overflow) = dataOffset.addingReportingOverflow(size)
        let (padded, overflowPadding) = end.addingReportingOverflow((512 - end % 512) % 512)
        return overflow || overflowPadding ? .max : padded
    }

    /// Members tile the tar stream in order: an entry whose headers begin inside the content of
    /// the one before it points at bytes that, read in order, are that member's content. A header
    /// hidden in a file's content would otherwise be extracted, by a selection that trusts the
    /// index, as a member that tar and a full extraction never see.
    ///
    /// Nor may two members leave room between them for a zero block: amk writes members one
    /// after the other, and a member listed past tar's end-of-archive marker (two zero blocks; GNU
    /// tar and Python's tarfile stop at one) is one that tar, a full extraction and a pipe's
    /// reading never reach, which a selection that trusts the index wrote.
    static func checkAfter(_ previousEnd: UInt64, entry: Int, headerOffset: UInt64, blockOffset: UInt64?) throws(ArchiveError) {
        guard headerOffset >= previousEnd else {
            throw corrupt(
                "entry \(entry) begins at tar offset \(headerOffset), inside the content of the entry before it "
                    + "(which ends at \(previousEnd))", blockOffset)
        }
        // The first member may follow a global header of any size (amk's metadata).
        guard entry == 0 || headerOffset - previousEnd < 512 else {
            throw corrupt(
                "entry \(entry) begins at tar offset \(headerOffset), \(headerOffset - previousEnd) bytes after the "
                    + "entry before it (which ends at \(previousEnd)): room for a zero block, where tar's reading ends",
                blockOffset)
        }
    }

    static func corrupt(_ what: String, _ blockOffset: UInt64?) -> ArchiveError {
        ArchiveError(.corrupt, "archive index: \(what)", offset: blockOffset)
    }

    /// A name as the tar parser would make it: UTF-8, no NUL (which the kernel would cut a name
    /// at), at most ``maxNameLength`` bytes.
    static func name(_ bytes: some Collection<UInt8>, of what: @autoclosure () -> String, blockOffset: UInt64?) throws(ArchiveError)
        -> String
    {
        try checkName(bytes, of: what(), blockOffset: blockOffset)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The checks of ``name(_:of:blockOffset:)``, without making the string: for the names an
    /// index holds that a reading does not need.
    static func checkName(_ bytes: some Collection<UInt8>, of what: @autoclosure () -> String, blockOffset: UInt64?) throws(ArchiveError) {
        guard bytes.count <= maxNameLength else {
            throw corrupt("\(what()) is \(bytes.count) bytes long, over the limit of \(maxNameLength)", blockOffset)
        }
        guard isName(bytes) else {
            throw corrupt("\(what()) is not UTF-8 or holds a NUL byte", blockOffset)
        }
    }

    /// Whether `bytes` are UTF-8 without a NUL: a loop over the bytes for the ASCII names nearly
    /// all paths are, the standard library's validation for the others. Contiguous bytes (every
    /// caller's) take the fast path: listing a real tree's 13,890 names through the generic one
    /// spent a tenth of its time here.
    static func isName(_ bytes: some Collection<UInt8>) -> Bool {
        func check(_ buffer: UnsafeBufferPointer<UInt8>) -> Bool {
            var ascii = true
            for byte in buffer {
                if byte == 0 { return false }
                if byte >= 0x80 { ascii = false }
            }
            return ascii || String(validating: buffer, as: UTF8.self) != nil
        }
        return bytes.withContiguousStorageIfAvailable(check) ?? Array(bytes).withUnsafeBufferPointer(check)
    }

    /// The metadata pairs stored in `range` of `bytes`: keys and values as stored, or refused.
    static func decodeMetadata(_ bytes: [UInt8], _ range: Range<Int>, blockOffset: UInt64?) throws(ArchiveError) -> [String: String] {
        var metadata: [String: String] = [:]
        var cursor = range.lowerBound
        let metaEnd = range.upperBound
        while cursor < metaEnd {
            guard cursor + 4 <= metaEnd else { throw corrupt("metadata is cut short", blockOffset) }
            let kLen = Int(bytes.loadLE(at: cursor) as UInt32)
            guard kLen <= metaEnd - cursor - 4 else { throw corrupt("metadata is cut short", blockOffset) }
            // A repaired string would name other bytes, and a NUL in a key would make it another
            // key to any C reader.
            guard let key = String(validating: bytes[cursor + 4..<cursor + 4 + kLen], as: UTF8.self), !key.utf8.contains(0) else {
                throw corrupt("a metadata key is not valid UTF-8 or holds a NUL byte", blockOffset)
            }
            cursor += 4 + kLen
            guard cursor + 4 <= metaEnd else { throw corrupt("metadata is cut short", blockOffset) }
            let vLen = Int(bytes.loadLE(at: cursor) as UInt32)
            guard vLen <= metaEnd - cursor - 4 else { throw corrupt("metadata is cut short", blockOffset) }
            guard let value = String(validating: bytes[cursor + 4..<cursor + 4 + vLen], as: UTF8.self) else {
                throw corrupt("the value of metadata key '\(TerminalSafe.name(key))' is not valid UTF-8", blockOffset)
            }
            // Swift's `String` keys compare by canonical equivalence: "caf\u{E9}" and
            // "cafe\u{301}" would become one key showing one of the two values. No writer of this
            // format repeats a key, so a repeat in either form is damage, named as such.
            if let existing = metadata.index(forKey: key) {
                let other = metadata.keys[existing]
                throw corrupt(
                    UTF8Bytes.equal(other, key)
                        ? "metadata key '\(TerminalSafe.name(key))' appears twice"
                        : "metadata keys '\(TerminalSafe.name(other))' and '\(TerminalSafe.name(key))' are different bytes "
                            + "that read as one key", blockOffset)
            }
            metadata[key] = value
            cursor += 4 + vLen
        }
        return metadata
    }

    /// The metadata pairs, sorted by key, as both versions store them.
    func encodedMetadata() -> [UInt8] { Self.encodedMetadata(metadata) }

    static func encodedMetadata(_ metadata: [String: String]) -> [UInt8] {
        var meta: [UInt8] = []
        for key in metadata.keys.sorted() {
            let k = Array(key.utf8)
            let v = Array(metadata[key]!.utf8)
            meta.appendLE(UInt32(k.count))
            meta.append(contentsOf: k)
            meta.appendLE(UInt32(v.count))
            meta.append(contentsOf: v)
        }
        return meta
    }
}
