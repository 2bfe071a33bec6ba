import Tar

/// The rich index: every member's place and metadata, and the archive's metadata, in one block
/// after the tar stream, so a reader lists an archive and finds any member without decompressing
/// data.
///
/// Layout (all integers little-endian), version 1.0:
/// ```
/// header, 64 bytes
///   0  [8] "AMKINDEX"          8 u16 major   10 u16 minor   12 u32 record size (96)
///   16 u64 entry count N      24 u64 tar size T             32 u64 chunk size C
///   40 u64 string heap size S  48 u8 checksum kind (1 = CRC64)  49 u8 checksum length (8)
///   50 u16 0                  52 u32 metadata size M        56 u64 0
/// N records of `record size` bytes, in tar order
///   0 u64 header offset  8 u64 data offset  16 u64 size  24 i64 mtime s  32 u32 mtime ns
///   36 u32 mode  40 u32 uid  44 u32 gid  48 u8 typeflag  49 u8 flags (bit 0: pax header)
///   50 u16 0  52 u32 path length  56 u64 path offset in heap  64 u64 link offset  72 u32 link length
///   76 u32 0  80 [16] checksum (CRC64 in bytes 80..<88)
/// S bytes of string heap, then M bytes of metadata: per pair u32 key length, key, u32 value length, value
/// ```
/// Readers stride by the record size, so later versions can append fields; an unknown major
/// version is refused.
public struct ArchiveIndex: Sendable {
    /// The 8 bytes that open the index: `AMKINDEX`.
    public static let magic: [UInt8] = Array("AMKINDEX".utf8)
    /// The layout's major version: a reader refuses an index of another major version.
    public static let majorVersion: UInt16 = 1
    /// The layout's minor version: later minors only append fields, which older readers skip.
    public static let minorVersion: UInt16 = 0
    static let headerSize = 64
    static let recordSize = 96
    static let checksumCRC64: UInt8 = 1
    /// uid and gid larger than this are stored as this value in the record (the tar header keeps
    /// the real one).
    static let idCeiling = UInt64(UInt32.max)

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

    /// The block payload.
    public func encoded() -> [UInt8] {
        var heap: [UInt8] = []
        var records: [UInt8] = []
        records.reserveCapacity(entries.count * Self.recordSize)
        for entry in entries {
            let pathOffset = UInt64(heap.count)
            heap.append(contentsOf: entry.path.utf8)
            let linkOffset = UInt64(heap.count)
            let link = Array((entry.linkTarget ?? "").utf8)
            heap.append(contentsOf: link)
            var record = [UInt8](repeating: 0, count: Self.recordSize)
            record.storeLE(entry.headerOffset, at: 0)
            record.storeLE(entry.dataOffset, at: 8)
            record.storeLE(entry.size, at: 16)
            record.storeLE(UInt64(bitPattern: entry.mtime.seconds), at: 24)
            record.storeLE(entry.mtime.nanoseconds, at: 32)
            record.storeLE(entry.mode, at: 36)
            record.storeLE(UInt32(min(entry.uid, Self.idCeiling)), at: 40)
            record.storeLE(UInt32(min(entry.gid, Self.idCeiling)), at: 44)
            record[48] = entry.kind.typeflag
            record[49] = entry.hasPaxHeader ? 1 : 0
            record.storeLE(UInt32(entry.path.utf8.count), at: 52)
            record.storeLE(pathOffset, at: 56)
            record.storeLE(linkOffset, at: 64)
            record.storeLE(UInt32(link.count), at: 72)
            if let checksum = entry.checksum { record.storeLE(checksum, at: 80) }
            records.append(contentsOf: record)
        }
        var meta: [UInt8] = []
        for key in metadata.keys.sorted() {
            let k = Array(key.utf8)
            let v = Array(metadata[key]!.utf8)
            meta.appendLE(UInt32(k.count))
            meta.append(contentsOf: k)
            meta.appendLE(UInt32(v.count))
            meta.append(contentsOf: v)
        }
        var out = [UInt8](repeating: 0, count: Self.headerSize)
        out.replaceSubrange(0..<8, with: Self.magic)
        out.storeLE(Self.majorVersion, at: 8)
        out.storeLE(Self.minorVersion, at: 10)
        out.storeLE(UInt32(Self.recordSize), at: 12)
        out.storeLE(UInt64(entries.count), at: 16)
        out.storeLE(tarSize, at: 24)
        out.storeLE(chunkSize, at: 32)
        out.storeLE(UInt64(heap.count), at: 40)
        out[48] = Self.checksumCRC64
        out[49] = 8
        out.storeLE(UInt32(meta.count), at: 52)
        out.reserveCapacity(out.count + records.count + heap.count + meta.count)
        out.append(contentsOf: records)
        out.append(contentsOf: heap)
        out.append(contentsOf: meta)
        return out
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

    /// What the 64-byte header of an index promises, checked before anything it describes is
    /// decoded or allocated.
    struct Header {
        var recordSize: Int
        var count: Int
        var tarSize: UInt64
        var chunkSize: UInt64
        var heapSize: UInt64
        var metadataSize: UInt64
        /// Header, records, heap and metadata: the bytes the index needs. Later versions may
        /// append more after them.
        var byteCount: UInt64
    }

    /// Reads and checks the 64-byte header at the start of `bytes` (which may hold more).
    ///
    /// The entry count is held to `maxEntries`, to what the tar stream can hold (every member
    /// takes a 512-byte header block) and, when `archiveSize` is given, to one member per
    /// ``minimumArchiveBytesPerEntry`` bytes of archive. The sizes are added with overflow checks.
    static func header(_ bytes: [UInt8], maxEntries: Int, archiveSize: UInt64?, blockOffset: UInt64?) throws(ArchiveError) -> Header {
        func corrupt(_ what: String) -> ArchiveError {
            ArchiveError(.corrupt, "archive index: \(what)", offset: blockOffset)
        }
        guard bytes.count >= headerSize, hasMagic(bytes) else { throw corrupt("missing AMKINDEX magic") }
        let major: UInt16 = bytes.loadLE(at: 8)
        guard major == majorVersion else {
            throw ArchiveError(
                .unsupportedVersion,
                "archive index version \(major).\(bytes.loadLE(at: 10) as UInt16) is not supported (this reader knows \(majorVersion).x)",
                offset: blockOffset)
        }
        let recordSize = Int(bytes.loadLE(at: 12) as UInt32)
        guard recordSize >= Self.recordSize, recordSize <= 1 << 16 else { throw corrupt("record size \(recordSize) is invalid") }
        let count: UInt64 = bytes.loadLE(at: 16)
        let tarSize: UInt64 = bytes.loadLE(at: 24)
        guard count <= UInt64(max(0, maxEntries)) else {
            throw ArchiveError(
                .limitExceeded, "archive index lists \(count) entries, more than the limit of \(maxEntries)", offset: blockOffset)
        }
        guard count <= tarSize / 512 else {
            throw corrupt("\(count) entries cannot fit in a tar stream of \(tarSize) bytes (each needs a 512-byte header)")
        }
        if let archiveSize, count > archiveSize / minimumArchiveBytesPerEntry {
            throw ArchiveError(
                .limitExceeded,
                "archive index lists \(count) entries, more than an archive of \(archiveSize) bytes can hold",
                offset: blockOffset)
        }
        let heapSize: UInt64 = bytes.loadLE(at: 40)
        let metadataSize = UInt64(bytes.loadLE(at: 52) as UInt32)
        // count <= maxEntries fits in an Int; every sum is checked.
        let (records, overflow1) = count.multipliedReportingOverflow(by: UInt64(recordSize))
        let (withHeader, overflow2) = records.addingReportingOverflow(UInt64(headerSize))
        let (withHeap, overflow3) = withHeader.addingReportingOverflow(heapSize)
        let (total, overflow4) = withHeap.addingReportingOverflow(metadataSize)
        guard !(overflow1 || overflow2 || overflow3 || overflow4) else {
            throw corrupt("sizes in the header overflow")
        }
        return Header(
            recordSize: recordSize, count: Int(count), tarSize: tarSize, chunkSize: bytes.loadLE(at: 32),
            heapSize: heapSize, metadataSize: metadataSize, byteCount: total)
    }

    /// Decodes and validates a block payload. Every count, offset and length is checked against
    /// the payload's size and the limits (the header is checked first),
    /// and the names the records reference may not add up to more than the string heap holds, so
    /// a lying index cannot crash or exhaust memory.
    /// - Parameters:
    ///   - bytes: the index block's decompressed payload.
    ///   - maxEntries: refuse an index listing more members.
    ///   - archiveSize: the size of the archive file (or of the compressed stream read so far),
    ///     which bounds the entry count; nil skips that bound.
    ///   - blockOffset: where the index block is in the file, for error messages.
    public static func decode(
        _ bytes: [UInt8], maxEntries: Int = 10_000_000, archiveSize: UInt64? = nil,
        blockOffset: UInt64? = nil
    ) throws(ArchiveError) -> ArchiveIndex {
        func corrupt(_ what: String) -> ArchiveError {
            ArchiveError(.corrupt, "archive index: \(what)", offset: blockOffset)
        }
        let header = try header(bytes, maxEntries: maxEntries, archiveSize: archiveSize, blockOffset: blockOffset)
        guard header.byteCount <= UInt64(bytes.count) else {
            throw corrupt("sizes in the header exceed the block (\(bytes.count) bytes)")
        }
        let count = header.count
        let recordSize = header.recordSize
        let tarSize = header.tarSize
        let chunkSize = header.chunkSize
        let metaSize = Int(header.metadataSize)
        let recordsEnd = headerSize + count * recordSize
        let heapStart = recordsEnd
        let heapSize = Int(header.heapSize)
        // Records could all name the same stretch of a large heap: what they name together is
        // held to the heap's size, so the strings made cost no more memory than the block.
        var named = 0
        func string(_ offset: UInt64, _ length: UInt32, _ i: Int) throws(ArchiveError) -> String {
            guard offset <= UInt64(heapSize), UInt64(length) <= UInt64(heapSize) - offset else {
                throw corrupt("record \(i) points outside the string heap")
            }
            guard Int(length) <= maxNameLength else {
                throw corrupt("record \(i) names a string of \(length) bytes, over the limit of \(maxNameLength)")
            }
            named += Int(length)
            guard named <= heapSize else {
                throw corrupt("records name more string bytes than the \(heapSize)-byte heap holds")
            }
            let start = heapStart + Int(offset)
            guard let s = String(validating: bytes[start..<start + Int(length)], as: UTF8.self) else {
                throw corrupt("record \(i) has a name that is not UTF-8")
            }
            return s
        }
        var entries: [ArchiveEntry] = []
        entries.reserveCapacity(count)
        var previousHeader: UInt64 = 0
        for i in 0..<count {
            let base = headerSize + i * recordSize
            let headerOffset: UInt64 = bytes.loadLE(at: base)
            let dataOffset: UInt64 = bytes.loadLE(at: base + 8)
            let size: UInt64 = bytes.loadLE(at: base + 16)
            guard headerOffset >= previousHeader, dataOffset <= tarSize, size <= tarSize - dataOffset else {
                throw corrupt("record \(i) has offsets outside the tar stream")
            }
            guard dataOffset >= headerOffset, dataOffset - headerOffset >= 512 else {
                throw corrupt("record \(i) leaves no room for its 512-byte tar header before its data")
            }
            previousHeader = headerOffset
            let kind = TarEntryKind(typeflag: bytes[base + 48])
            let path = try string(bytes.loadLE(at: base + 56), bytes.loadLE(at: base + 52), i)
            let linkLength: UInt32 = bytes.loadLE(at: base + 72)
            let link = linkLength == 0 ? nil : try string(bytes.loadLE(at: base + 64), linkLength, i)
            let nanos: UInt32 = bytes.loadLE(at: base + 32)
            guard nanos < 1_000_000_000 else { throw corrupt("record \(i) has an invalid mtime") }
            entries.append(
                ArchiveEntry(
                    path: path, kind: kind, size: size,
                    mode: bytes.loadLE(at: base + 36),
                    uid: UInt64(bytes.loadLE(at: base + 40) as UInt32),
                    gid: UInt64(bytes.loadLE(at: base + 44) as UInt32),
                    mtime: TarTimestamp(seconds: Int64(bitPattern: bytes.loadLE(at: base + 24)), nanoseconds: nanos),
                    linkTarget: link, headerOffset: headerOffset, dataOffset: dataOffset,
                    checksum: kind == .regular ? bytes.loadLE(at: base + 80) : nil,
                    hasPaxHeader: bytes[base + 49] & 1 != 0))
        }
        var metadata: [String: String] = [:]
        var cursor = heapStart + heapSize
        let metaEnd = cursor + metaSize
        while cursor < metaEnd {
            guard cursor + 4 <= metaEnd else { throw corrupt("metadata is cut short") }
            let kLen = Int(bytes.loadLE(at: cursor) as UInt32)
            guard kLen <= metaEnd - cursor - 4 else { throw corrupt("metadata is cut short") }
            // Keys and values as stored, or refused: a repaired string would name other bytes, and
            // a NUL in a key would make it another key to any C reader.
            guard let key = String(validating: bytes[cursor + 4..<cursor + 4 + kLen], as: UTF8.self), !key.utf8.contains(0) else {
                throw corrupt("a metadata key is not valid UTF-8 or holds a NUL byte")
            }
            cursor += 4 + kLen
            guard cursor + 4 <= metaEnd else { throw corrupt("metadata is cut short") }
            let vLen = Int(bytes.loadLE(at: cursor) as UInt32)
            guard vLen <= metaEnd - cursor - 4 else { throw corrupt("metadata is cut short") }
            guard let value = String(validating: bytes[cursor + 4..<cursor + 4 + vLen], as: UTF8.self) else {
                throw corrupt("the value of metadata key '\(TerminalSafe.name(key))' is not valid UTF-8")
            }
            metadata[key] = value
            cursor += 4 + vLen
        }
        return ArchiveIndex(entries: entries, tarSize: tarSize, chunkSize: chunkSize, metadata: metadata)
    }
}
