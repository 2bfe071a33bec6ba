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
    public static let magic: [UInt8] = Array("AMKINDEX".utf8)
    public static let majorVersion: UInt16 = 1
    public static let minorVersion: UInt16 = 0
    static let headerSize = 64
    static let recordSize = 96
    static let checksumCRC64: UInt8 = 1
    /// uid and gid larger than this are stored as this value in the record (the tar header keeps
    /// the real one).
    static let idCeiling = UInt64(UInt32.max)

    public var entries: [ArchiveEntry]
    /// Length of the tar stream, end marker included.
    public var tarSize: UInt64
    /// Uncompressed bytes per data block.
    public var chunkSize: UInt64
    public var metadata: [String: String]

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
            let k = Array(key.utf8), v = Array(metadata[key]!.utf8)
            meta.appendLE(UInt32(k.count)); meta.append(contentsOf: k)
            meta.appendLE(UInt32(v.count)); meta.append(contentsOf: v)
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

    /// Decodes and validates a block payload. Every count, offset and length is checked against
    /// the payload's size and `maxEntries`, so a lying index cannot crash or exhaust memory.
    /// - Parameter blockOffset: where the index block is in the file, for error messages.
    public static func decode(_ bytes: [UInt8], maxEntries: Int = 10_000_000, blockOffset: UInt64? = nil) throws(ArchiveError) -> ArchiveIndex {
        func corrupt(_ what: String) -> ArchiveError {
            ArchiveError(.corrupt, "archive index: \(what)", offset: blockOffset)
        }
        guard bytes.count >= headerSize, hasMagic(bytes) else { throw corrupt("missing AMKINDEX magic") }
        let major: UInt16 = bytes.loadLE(at: 8)
        guard major == majorVersion else {
            throw ArchiveError(.unsupportedVersion,
                               "archive index version \(major).\(bytes.loadLE(at: 10) as UInt16) is not supported (this reader knows \(majorVersion).x)",
                               offset: blockOffset)
        }
        let recordSize = Int(bytes.loadLE(at: 12) as UInt32)
        guard recordSize >= Self.recordSize, recordSize <= 1 << 16 else { throw corrupt("record size \(recordSize) is invalid") }
        let count64: UInt64 = bytes.loadLE(at: 16)
        guard count64 <= UInt64(maxEntries) else {
            throw ArchiveError(.limitExceeded, "archive index lists \(count64) entries, more than the limit of \(maxEntries)", offset: blockOffset)
        }
        let count = Int(count64)
        let tarSize: UInt64 = bytes.loadLE(at: 24)
        let chunkSize: UInt64 = bytes.loadLE(at: 32)
        let heapSize64: UInt64 = bytes.loadLE(at: 40)
        let metaSize = Int(bytes.loadLE(at: 52) as UInt32)
        let recordsEnd = headerSize + count * recordSize
        guard heapSize64 <= UInt64(bytes.count), recordsEnd <= bytes.count,
              recordsEnd + Int(heapSize64) + metaSize <= bytes.count else {
            throw corrupt("sizes in the header exceed the block (\(bytes.count) bytes)")
        }
        let heapStart = recordsEnd
        let heapSize = Int(heapSize64)
        func string(_ offset: UInt64, _ length: UInt32, _ i: Int) throws(ArchiveError) -> String {
            guard offset <= UInt64(heapSize), UInt64(length) <= UInt64(heapSize) - offset else {
                throw corrupt("record \(i) points outside the string heap")
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
            guard headerOffset >= previousHeader, dataOffset >= headerOffset, dataOffset <= tarSize,
                  size <= tarSize - dataOffset else {
                throw corrupt("record \(i) has offsets outside the tar stream")
            }
            previousHeader = headerOffset
            let kind = TarEntryKind(typeflag: bytes[base + 48])
            let path = try string(bytes.loadLE(at: base + 56), bytes.loadLE(at: base + 52), i)
            let linkLength: UInt32 = bytes.loadLE(at: base + 72)
            let link = linkLength == 0 ? nil : try string(bytes.loadLE(at: base + 64), linkLength, i)
            let nanos: UInt32 = bytes.loadLE(at: base + 32)
            guard nanos < 1_000_000_000 else { throw corrupt("record \(i) has an invalid mtime") }
            entries.append(ArchiveEntry(
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
            let key = String(decoding: bytes[cursor + 4..<cursor + 4 + kLen], as: UTF8.self)
            cursor += 4 + kLen
            guard cursor + 4 <= metaEnd else { throw corrupt("metadata is cut short") }
            let vLen = Int(bytes.loadLE(at: cursor) as UInt32)
            guard vLen <= metaEnd - cursor - 4 else { throw corrupt("metadata is cut short") }
            metadata[key] = String(decoding: bytes[cursor + 4..<cursor + 4 + vLen], as: UTF8.self)
            cursor += 4 + vLen
        }
        return ArchiveIndex(entries: entries, tarSize: tarSize, chunkSize: chunkSize, metadata: metadata)
    }
}
