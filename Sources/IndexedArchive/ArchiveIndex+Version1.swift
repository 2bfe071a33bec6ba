import Tar

/// Version 1 of the rich index, which every archive written before version 2 carries: fixed
/// records and a string heap. Read for those archives; written only by tests, which check that
/// they still read.
///
/// ```
/// header, 64 bytes
///   0  [8] "AMKINDEX"          8 u16 major (1) 10 u16 minor  12 u32 record size (96)
///   16 u64 entry count N      24 u64 tar size T             32 u64 chunk size C
///   40 u64 string heap size S  48 u8 checksum kind (1 = CRC64)  49 u8 checksum length (8)
///   50 u16 0                  52 u32 metadata size M        56 u64 0
/// N records of `record size` bytes, in tar order
///   0 u64 header offset  8 u64 data offset  16 u64 size  24 i64 mtime s  32 u32 mtime ns
///   36 u32 mode  40 u32 uid  44 u32 gid  48 u8 typeflag  49 u8 flags (bit 0: pax header)
///   50 u16 0  52 u32 path length  56 u64 path offset in heap  64 u64 link offset  72 u32 link length
///   76 u32 0  80 [16] checksum (CRC64 in bytes 80..<88)
/// S bytes of string heap, then M bytes of metadata
/// ```
/// Readers stride by the record size, so later minors could append fields to a record.
extension ArchiveIndex {
    static let version1HeaderSize = 64
    static let version1RecordSize = 96
    /// uid and gid larger than this are stored as this value in a version 1 record (the tar
    /// header keeps the real one).
    static let version1IdCeiling = UInt64(UInt32.max)

    static func version1Header(
        _ bytes: [UInt8], count: Int, tarSize: UInt64, chunkSize: UInt64, blockOffset: UInt64?
    ) throws(ArchiveError) -> Header {
        let recordSize = Int(bytes.loadLE(at: 12) as UInt32)
        guard recordSize >= version1RecordSize, recordSize <= 1 << 16 else {
            throw corrupt("record size \(recordSize) is invalid", blockOffset)
        }
        let heapSize: UInt64 = bytes.loadLE(at: 40)
        let metadataSize = UInt64(bytes.loadLE(at: 52) as UInt32)
        let (records, overflow1) = UInt64(count).multipliedReportingOverflow(by: UInt64(recordSize))
        let (withHeader, overflow2) = records.addingReportingOverflow(UInt64(version1HeaderSize))
        let (withHeap, overflow3) = withHeader.addingReportingOverflow(heapSize)
        let (total, overflow4) = withHeap.addingReportingOverflow(metadataSize)
        guard !(overflow1 || overflow2 || overflow3 || overflow4) else {
            throw corrupt("sizes in the header overflow", blockOffset)
        }
        return Header(
            major: 1, count: count, tarSize: tarSize, chunkSize: chunkSize, byteCount: total, pathsByteCount: total,
            recordSize: recordSize, heapSize: heapSize, metadataSize: metadataSize)
    }

    /// Decodes a version 1 payload whose header has been checked and whose sizes fit in `bytes`.
    /// The names the records reference may not add up to more than the string heap holds.
    static func decodeVersion1(_ bytes: [UInt8], header: Header, blockOffset: UInt64?) throws(ArchiveError) -> ArchiveIndex {
        let count = header.count
        let recordSize = header.recordSize
        let tarSize = header.tarSize
        let heapStart = version1HeaderSize + count * recordSize
        let heapSize = Int(header.heapSize)
        // Records could all name the same stretch of a large heap: what they name together is
        // held to the heap's size, so the strings made cost no more memory than the block.
        var named = 0
        func string(_ offset: UInt64, _ length: UInt32, _ i: Int, _ what: String) throws(ArchiveError) -> String {
            guard offset <= UInt64(heapSize), UInt64(length) <= UInt64(heapSize) - offset else {
                throw corrupt("record \(i) points outside the string heap", blockOffset)
            }
            named += Int(length)
            guard named <= heapSize else {
                throw corrupt("records name more string bytes than the \(heapSize)-byte heap holds", blockOffset)
            }
            let start = heapStart + Int(offset)
            return try name(bytes[start..<start + Int(length)], of: "the \(what) of record \(i)", blockOffset: blockOffset)
        }
        var entries: [ArchiveEntry] = []
        entries.reserveCapacity(count)
        var previousHeader: UInt64 = 0
        var previousEnd: UInt64 = 0
        for i in 0..<count {
            let base = version1HeaderSize + i * recordSize
            let headerOffset: UInt64 = bytes.loadLE(at: base)
            let dataOffset: UInt64 = bytes.loadLE(at: base + 8)
            let size: UInt64 = bytes.loadLE(at: base + 16)
            guard headerOffset >= previousHeader, dataOffset <= tarSize, size <= tarSize - dataOffset else {
                throw corrupt("record \(i) has offsets outside the tar stream", blockOffset)
            }
            guard dataOffset >= headerOffset, dataOffset - headerOffset >= 512 else {
                throw corrupt("record \(i) leaves no room for its 512-byte tar header before its data", blockOffset)
            }
            try Self.checkAfter(previousEnd, entry: i, headerOffset: headerOffset, blockOffset: blockOffset)
            previousEnd = Self.paddedEnd(dataOffset: dataOffset, size: size)
            previousHeader = headerOffset
            let kind = TarEntryKind(typeflag: bytes[base + 48])
            let path = try string(bytes.loadLE(at: base + 56), bytes.loadLE(at: base + 52), i, "path")
            let linkLength: UInt32 = bytes.loadLE(at: base + 72)
            let link = linkLength == 0 ? nil : try string(bytes.loadLE(at: base + 64), linkLength, i, "link target")
            let nanos: UInt32 = bytes.loadLE(at: base + 32)
            guard nanos < 1_000_000_000 else { throw corrupt("record \(i) has an invalid mtime", blockOffset) }
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
        let metaStart = heapStart + heapSize
        let metadata = try decodeMetadata(bytes, metaStart..<metaStart + Int(header.metadataSize), blockOffset: blockOffset)
        return ArchiveIndex(entries: entries, tarSize: tarSize, chunkSize: header.chunkSize, metadata: metadata)
    }

    /// The payload in version 1's layout, as archives written before version 2 carry it.
    func encodedVersion1() -> [UInt8] {
        let recordSize = Self.version1RecordSize
        var heap: [UInt8] = []
        var records: [UInt8] = []
        records.reserveCapacity(entries.count * recordSize)
        for entry in entries {
            let pathOffset = UInt64(heap.count)
            heap.append(contentsOf: entry.path.utf8)
            let linkOffset = UInt64(heap.count)
            let link = Array((entry.linkTarget ?? "").utf8)
            heap.append(contentsOf: link)
            var record = [UInt8](repeating: 0, count: recordSize)
            record.storeLE(entry.headerOffset, at: 0)
            record.storeLE(entry.dataOffset, at: 8)
            record.storeLE(entry.size, at: 16)
            record.storeLE(UInt64(bitPattern: entry.mtime.seconds), at: 24)
            record.storeLE(entry.mtime.nanoseconds, at: 32)
            record.storeLE(entry.mode, at: 36)
            record.storeLE(UInt32(min(entry.uid, Self.version1IdCeiling)), at: 40)
            record.storeLE(UInt32(min(entry.gid, Self.version1IdCeiling)), at: 44)
            record[48] = entry.kind.typeflag
            record[49] = entry.hasPaxHeader ? 1 : 0
            record.storeLE(UInt32(entry.path.utf8.count), at: 52)
            record.storeLE(pathOffset, at: 56)
            record.storeLE(linkOffset, at: 64)
            record.storeLE(UInt32(link.count), at: 72)
            if let checksum = entry.checksum { record.storeLE(checksum, at: 80) }
            records.append(contentsOf: record)
        }
        let meta = encodedMetadata()
        var out = [UInt8](repeating: 0, count: Self.version1HeaderSize)
        out.replaceSubrange(0..<8, with: Self.magic)
        out.storeLE(UInt16(1), at: 8)
        out.storeLE(UInt16(0), at: 10)
        out.storeLE(UInt32(recordSize), at: 12)
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
}
