import Tar

/// The sizes of version 2's sections, in the order they follow the header.
struct Version2Sections: Equatable {
    var names: UInt64 = 0
    var places: UInt64 = 0
    var attributes: UInt64 = 0
    var checksums: UInt64 = 0
    var metadata: UInt64 = 0
}

/// Version 2 of the rich index (the layout is in ``ArchiveIndex``'s documentation): the names
/// first, front-coded, then the fields as variable-length integers.
extension ArchiveIndex {
    /// The fewest bytes one member takes in each section: two varints of names, two bytes and
    /// three varints of places, six varints of attributes. A count the sections cannot hold is
    /// refused before anything is allocated for it.
    static let version2MinimumBytes = (names: 2, places: 5, attributes: 6)

    static func version2Header(
        _ bytes: [UInt8], count: Int, tarSize: UInt64, chunkSize: UInt64, blockOffset: UInt64?
    ) throws(ArchiveError) -> Header {
        let headerLength = Int(bytes.loadLE(at: 12) as UInt32)
        guard headerLength >= headerSize, headerLength <= 4096 else {
            throw corrupt("header size \(headerLength) is invalid", blockOffset)
        }
        guard bytes[80] == checksumCRC64 else { throw corrupt("checksum kind \(bytes[80]) is unknown", blockOffset) }
        let sections = Version2Sections(
            names: bytes.loadLE(at: 40), places: bytes.loadLE(at: 48), attributes: bytes.loadLE(at: 56),
            checksums: bytes.loadLE(at: 64), metadata: bytes.loadLE(at: 72))
        var total = UInt64(headerLength)
        for size in [sections.names, sections.places, sections.attributes, sections.checksums, sections.metadata] {
            let (sum, overflow) = total.addingReportingOverflow(size)
            guard !overflow else { throw corrupt("sizes in the header overflow", blockOffset) }
            total = sum
        }
        // No overflow: it is a part of `total`.
        let pathsEnd = UInt64(headerLength) + sections.names
        let minimum = version2MinimumBytes
        guard UInt64(count) <= sections.names / UInt64(minimum.names),
            UInt64(count) <= sections.places / UInt64(minimum.places),
            UInt64(count) <= sections.attributes / UInt64(minimum.attributes),
            sections.checksums <= UInt64(count) * 8, sections.checksums % 8 == 0
        else {
            throw corrupt("\(count) entries do not fit in the section sizes the header gives", blockOffset)
        }
        return Header(
            major: 2, count: count, tarSize: tarSize, chunkSize: chunkSize, byteCount: total, pathsByteCount: pathsEnd,
            metadataSize: sections.metadata, headerLength: headerLength, sections: sections)
    }

    /// What the names of an index may add up to, written out: at most `maxNameBytes`, and no
    /// more than the tar stream, which holds every path and link target in full.
    struct NameBudget {
        /// The `underlying` error of a budget spent past `maxNameBytes` while the tar stream
        /// could still hold the names: the index may be honest, only more than the caller holds.
        /// An archive ``ArchivePacker`` wrote (thousands of 3 KB paths, front-coded into a small
        /// file) is then read from its tar stream instead (``ArchiveLayout``).
        struct OverAllowance: Error {}

        let limit: UInt64
        /// Whether `limit` is the caller's allowance rather than the tar stream's size.
        let isAllowance: Bool
        private(set) var used: UInt64 = 0

        init(maxNameBytes: Int, tarSize: UInt64) {
            let allowance = UInt64(max(0, maxNameBytes))
            limit = min(allowance, tarSize)
            isAllowance = allowance < tarSize
        }

        /// What the names may still add up to.
        var remaining: UInt64 { limit - used }

        mutating func spend(_ bytes: Int, blockOffset: UInt64?) throws(ArchiveError) {
            used += UInt64(bytes)
            guard used <= limit else {
                throw ArchiveError(
                    .limitExceeded, "archive index: its names add up to more than \(limit) bytes", offset: blockOffset,
                    underlying: isAllowance ? OverAllowance() : nil)
            }
        }
    }

    /// What the paths of the names section at `cursor` add up to, read ahead without building
    /// them, so that ``decodeNames(_:count:budget:)`` allocates their bytes once.
    ///
    /// Grown by doubling, the byte array of a real tree's 13,891 paths (0.8 MB) went through
    /// 1.6 MB of fresh pages, and listing such an archive is short enough that those page faults
    /// were a tenth of it. Nil when the section is damaged or the paths add up to more than
    /// `limit`: the decoding then says what is wrong.
    static func pathBytes(_ cursor: IndexCursor, count: Int, limit: UInt64) -> Int? {
        var cursor = cursor
        var length: UInt64 = 0
        var total: UInt64 = 0
        for i in 0..<count {
            guard let shared = try? cursor.varint(of: i), let rest = try? cursor.varint(of: i),
                shared <= length, rest <= UInt64(maxNameLength), (try? cursor.skip(Int(rest), of: i)) != nil
            else { return nil }
            length = shared + rest
            total += length
            guard total <= limit else { return nil }
        }
        return Int(total)
    }

    /// Reads the names section: each path is the previous one's first `shared` bytes and a rest.
    static func decodeNames(_ cursor: inout IndexCursor, count: Int, budget: inout NameBudget) throws(ArchiveError) -> MemberPathList {
        var paths = MemberPathList()
        paths.reserve(paths: count, bytes: pathBytes(cursor, count: count, limit: budget.remaining) ?? 0)
        var path: [UInt8] = []
        for i in 0..<count {
            let shared = try cursor.varint(of: i)
            let rest = try cursor.varint(of: i)
            guard shared <= UInt64(path.count), rest <= UInt64(maxNameLength) else {
                throw cursor.corrupt("entry \(i) shares \(shared) bytes with a path of \(path.count) and adds \(rest)")
            }
            path.removeLast(path.count - Int(shared))
            path.append(contentsOf: try cursor.bytes(Int(rest), of: i))
            guard path.count <= maxNameLength else {
                throw cursor.corrupt("the path of entry \(i) is \(path.count) bytes long, over the limit of \(maxNameLength)")
            }
            try budget.spend(path.count, blockOffset: cursor.blockOffset)
            // The checks of ``ArchiveIndex/name(_:of:blockOffset:)``, without a string per path
            // (nor a message made for each: listing 13,890 names spent a tenth of its time on them).
            guard isName(path) else {
                throw cursor.corrupt("the path of entry \(i) is not UTF-8 or holds a NUL byte")
            }
            paths.append(path)
        }
        try cursor.expectEnd()
        return paths
    }

    /// Decodes a version 2 payload whose header has been checked and whose sizes fit in `bytes`.
    ///
    /// With `keep`, only the members whose path (as stored) it accepts become entries: every
    /// member is still decoded and checked as a full decoding checks it, but the others cost no
    /// string and no entry (a member chosen among 13,890 spent a third of its opening making them).
    /// `visit` is given every member's entry, kept or not, in order.
    static func decodeVersion2(
        _ bytes: [UInt8], header: Header, blockOffset: UInt64?, maxNameBytes: Int,
        keeping keep: ((ArraySlice<UInt8>) -> Bool)? = nil,
        visiting visit: ((ArchiveEntry) throws(ArchiveError) -> Void)? = nil
    ) throws(ArchiveError) -> ArchiveIndex {
        let count = header.count
        let tarSize = header.tarSize
        let s = header.sections
        var start = header.headerLength
        func section(_ size: UInt64, _ name: String) -> IndexCursor {
            defer { start += Int(size) }
            return IndexCursor(bytes, from: start, count: Int(size), section: name, blockOffset: blockOffset)
        }
        var namesSection = section(s.names, "names")
        var places = section(s.places, "places")
        var attributes = section(s.attributes, "attributes")
        var checksums = section(s.checksums, "checksums")
        let metadataStart = start
        // The link targets count against the same budget as the paths.
        var budget = NameBudget(maxNameBytes: maxNameBytes, tarSize: tarSize)
        let names = try decodeNames(&namesSection, count: count, budget: &budget)
        var entries: [ArchiveEntry] = []
        if keep == nil { entries.reserveCapacity(count) }
        var previousHeader: UInt64 = 0
        var previousEnd: UInt64 = 0
        var previousSeconds: Int64 = 0
        for i in 0..<count {
            let kind = TarEntryKind(typeflag: try places.byte(of: i))
            let flags = try places.byte(of: i)
            let (headerOffset, overflow1) = previousHeader.addingReportingOverflow(try places.varint(of: i))
            let (dataStart, overflow2) = headerOffset.addingReportingOverflow(512)
            let (dataOffset, overflow3) = dataStart.addingReportingOverflow(try places.varint(of: i))
            let size = try places.varint(of: i)
            guard !(overflow1 || overflow2 || overflow3), dataOffset <= tarSize, size <= tarSize - dataOffset else {
                throw corrupt("entry \(i) has offsets outside the tar stream", blockOffset)
            }
            try Self.checkAfter(previousEnd, entry: i, headerOffset: headerOffset, blockOffset: blockOffset)
            previousEnd = Self.paddedEnd(dataOffset: dataOffset, size: size)
            previousHeader = headerOffset
            let seconds = previousSeconds &+ Self.unzigzag(try attributes.varint(of: i))
            previousSeconds = seconds
            let nanoseconds = try attributes.varint(of: i)
            let mode = try attributes.varint(of: i)
            guard nanoseconds < 1_000_000_000, mode <= UInt64(UInt32.max) else {
                throw corrupt("entry \(i) has an invalid mtime or mode", blockOffset)
            }
            let uid = try attributes.varint(of: i)
            let gid = try attributes.varint(of: i)
            let linkLength = try attributes.varint(of: i)
            let kept = keep?(names[i]) ?? true
            let made = kept || visit != nil
            var link: String?
            if linkLength > 0 {
                guard linkLength <= UInt64(maxNameLength) else {
                    throw corrupt(
                        "the link target of entry \(i) is \(linkLength) bytes long, over the limit of \(maxNameLength)", blockOffset)
                }
                try budget.spend(Int(linkLength), blockOffset: blockOffset)
                let target = try attributes.bytes(Int(linkLength), of: i)
                if made {
                    link = try name(target, of: "the link target of entry \(i)", blockOffset: blockOffset)
                } else {
                    try checkName(target, of: "the link target of entry \(i)", blockOffset: blockOffset)
                }
            }
            let checksum = kind == .regular ? try checksums.uint64(of: i) : nil
            guard made else { continue }
            let entry = ArchiveEntry(
                path: String(decoding: names[i], as: UTF8.self), kind: kind, size: size, mode: UInt32(mode), uid: uid, gid: gid,
                mtime: TarTimestamp(seconds: seconds, nanoseconds: UInt32(nanoseconds)), linkTarget: link,
                headerOffset: headerOffset, dataOffset: dataOffset, checksum: checksum, hasPaxHeader: flags & 1 != 0)
            try visit?(entry)
            if kept { entries.append(entry) }
        }
        try places.expectEnd()
        try attributes.expectEnd()
        try checksums.expectEnd()
        let metadata = try decodeMetadata(bytes, metadataStart..<metadataStart + Int(s.metadata), blockOffset: blockOffset)
        return ArchiveIndex(entries: entries, tarSize: tarSize, chunkSize: header.chunkSize, metadata: metadata)
    }

    /// Version 2's member sections, built one member at a time in tar order.
    ///
    /// Each member is coded against the one before it (front-coded names, offset and time
    /// differences), so the sections can grow as members are packed: a pack keeps these bytes,
    /// about 40 a member, rather than every member's ``ArchiveEntry`` (about 200 bytes with its
    /// path) until the stream ends.
    struct MemberSections: Sendable {
        private(set) var count = 0
        private(set) var names: [UInt8] = []
        private(set) var places: [UInt8] = []
        private(set) var attributes: [UInt8] = []
        private(set) var checksums: [UInt8] = []
        private var previousPath: [UInt8] = []
        private var previousHeader: UInt64 = 0
        private var previousSeconds: Int64 = 0

        mutating func append(_ entry: ArchiveEntry) {
            count += 1
            let path = Array(entry.path.utf8)
            // A plain loop: `zip(…).prefix(while:)` cost most of a 100,000-member pack's index
            // time in a debug build (generic metadata lookups per byte).
            let limit = min(previousPath.count, path.count)
            var shared = 0
            while shared < limit && previousPath[shared] == path[shared] { shared += 1 }
            names.appendVarint(UInt64(shared))
            names.appendVarint(UInt64(path.count - shared))
            names.append(contentsOf: path[shared...])
            previousPath = path
            places.append(entry.kind.typeflag)
            places.append(entry.hasPaxHeader ? 1 : 0)
            // Members are in tar order, each after its header: the differences are never
            // negative in an index this package writes (wrapping keeps any other input exact).
            places.appendVarint(entry.headerOffset &- previousHeader)
            places.appendVarint(entry.dataOffset &- entry.headerOffset &- 512)
            places.appendVarint(entry.size)
            previousHeader = entry.headerOffset
            attributes.appendVarint(ArchiveIndex.zigzag(entry.mtime.seconds &- previousSeconds))
            previousSeconds = entry.mtime.seconds
            attributes.appendVarint(UInt64(entry.mtime.nanoseconds))
            attributes.appendVarint(UInt64(entry.mode))
            attributes.appendVarint(entry.uid)
            attributes.appendVarint(entry.gid)
            let link = Array((entry.linkTarget ?? "").utf8)
            attributes.appendVarint(UInt64(link.count))
            attributes.append(contentsOf: link)
            if entry.kind == .regular { checksums.appendLE(entry.checksum ?? 0) }
        }
    }

    /// The payload in version 2's layout.
    func encodedVersion2() -> [UInt8] {
        var sections = MemberSections()
        for entry in entries { sections.append(entry) }
        return Self.encodedVersion2(sections, tarSize: tarSize, chunkSize: chunkSize, metadata: metadata)
    }

    /// The payload in version 2's layout for members already coded into `sections`.
    static func encodedVersion2(
        _ sections: MemberSections, tarSize: UInt64, chunkSize: UInt64, metadata: [String: String]
    ) -> [UInt8] {
        let meta = encodedMetadata(metadata)
        var out = [UInt8](repeating: 0, count: Self.headerSize)
        out.replaceSubrange(0..<8, with: Self.magic)
        out.storeLE(UInt16(2), at: 8)
        out.storeLE(Self.minorVersion, at: 10)
        out.storeLE(UInt32(Self.headerSize), at: 12)
        out.storeLE(UInt64(sections.count), at: 16)
        out.storeLE(tarSize, at: 24)
        out.storeLE(chunkSize, at: 32)
        out.storeLE(UInt64(sections.names.count), at: 40)
        out.storeLE(UInt64(sections.places.count), at: 48)
        out.storeLE(UInt64(sections.attributes.count), at: 56)
        out.storeLE(UInt64(sections.checksums.count), at: 64)
        out.storeLE(UInt64(meta.count), at: 72)
        out[80] = Self.checksumCRC64
        out.reserveCapacity(
            out.count + sections.names.count + sections.places.count + sections.attributes.count + sections.checksums.count
                + meta.count)
        out += sections.names
        out += sections.places
        out += sections.attributes
        out += sections.checksums
        out += meta
        return out
    }

    static func zigzag(_ value: Int64) -> UInt64 {
        UInt64(bitPattern: (value << 1) ^ (value >> 63))
    }

    static func unzigzag(_ value: UInt64) -> Int64 {
        Int64(bitPattern: value >> 1) ^ -Int64(bitPattern: value & 1)
    }
}

/// Reads one section of a version 2 index: bytes and LEB128 varints, never past the section's
/// end, with errors that name the section and the entry.
struct IndexCursor {
    private let bytes: [UInt8]
    private var position: Int
    private let end: Int
    let section: String
    let blockOffset: UInt64?

    /// `count` bytes from `start`; the caller has checked that they lie inside `bytes`.
    init(_ bytes: [UInt8], from start: Int, count: Int, section: String, blockOffset: UInt64?) {
        self.bytes = bytes
        position = start
        end = start + count
        self.section = section
        self.blockOffset = blockOffset
    }

    func corrupt(_ what: String) -> ArchiveError {
        ArchiveIndex.corrupt("\(section) section: \(what)", blockOffset)
    }

    private func cutShort(_ entry: Int) -> ArchiveError {
        corrupt("cut short at entry \(entry)")
    }

    mutating func byte(of entry: Int) throws(ArchiveError) -> UInt8 {
        guard position < end else { throw cutShort(entry) }
        defer { position += 1 }
        return bytes[position]
    }

    mutating func varint(of entry: Int) throws(ArchiveError) -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard position < end else { throw cutShort(entry) }
            let byte = bytes[position]
            position += 1
            // The tenth byte may only carry the top bit of a UInt64.
            guard shift < 63 || byte <= 1 else { throw corrupt("a number of entry \(entry) does not fit in 64 bits") }
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
    }

    mutating func uint64(of entry: Int) throws(ArchiveError) -> UInt64 {
        guard end - position >= 8 else { throw cutShort(entry) }
        defer { position += 8 }
        return bytes.loadLE(at: position)
    }

    mutating func bytes(_ count: Int, of entry: Int) throws(ArchiveError) -> ArraySlice<UInt8> {
        guard count <= end - position else { throw cutShort(entry) }
        defer { position += count }
        return bytes[position..<position + count]
    }

    /// Moves past `count` bytes without making a slice of them.
    mutating func skip(_ count: Int, of entry: Int) throws(ArchiveError) {
        guard count <= end - position else { throw cutShort(entry) }
        position += count
    }

    /// A section holds exactly what its entries need: anything left over is damage.
    func expectEnd() throws(ArchiveError) {
        guard position == end else { throw corrupt("\(end - position) bytes left over after the last entry") }
    }
}

extension Array where Element == UInt8 {
    mutating func appendVarint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        append(UInt8(value))
    }
}
