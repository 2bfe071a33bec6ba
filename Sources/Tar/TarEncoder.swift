/// Turns ``TarHeader`` values into POSIX pax tar header bytes.
///
/// Output follows the writer rules verified against GNU tar 1.34 and bsdtar 3.6.2: a pax `x`
/// header is emitted only when a value does not fit the ustar fields, the ustar `name` and
/// `linkname` are never left empty (bsdtar turns a symlink with an empty linkname into an empty
/// regular file), and the archive ends with exactly 1024 zero bytes and no record padding.
/// Content bytes are not handled here: write them after the header, then
/// ``padding(forContentSize:)`` zero bytes.
public enum TarEncoder {
    /// The tar block size.
    public static let blockSize: Int = 512

    /// The end-of-archive marker: exactly 1024 zero bytes.
    public static let endOfArchive: [UInt8] = [UInt8](repeating: 0, count: 1024)

    /// The number of zero bytes needed after `size` content bytes to reach a block boundary.
    public static func padding(forContentSize size: UInt64) -> Int {
        let remainder = Int(size % UInt64(blockSize))
        return remainder == 0 ? 0 : blockSize - remainder
    }

    /// Encodes a member's header: a pax `x` header when the rules require one, then the ustar
    /// header. The result's length is a multiple of 512; the content is not included.
    ///
    /// pax records are emitted for: `path` / `linkpath` longer than 100 bytes or not ASCII;
    /// `size` above 8 GiB - 1 (the ustar size field is then 0); `mtime` with nanoseconds or
    /// outside the ustar range (as `"%d.%09d"`); `uid` / `gid` above 2097151; `uname` /
    /// `gname` not ASCII or longer than 31 bytes.
    ///
    /// - Throws: ``TarError`` with code `.invalidValue` when the header cannot be stored
    ///   faithfully: an empty path, a NUL byte in a string, a non-directory path ending in
    ///   "/", content on a member that cannot have any, a missing or stray link target, a
    ///   device number above 2097151, or an `.other` typeflag that would be misread. A name
    ///   that is not UTF-8 (``RawName``) is written as its bytes, in the pax record as GNU tar
    ///   writes it (without `hdrcharset`, a keyword GNU tar 1.34 warns about).
    ///   `mode` is masked with `0o7777` rather than rejected.
    public static func encode(_ header: TarHeader) throws -> [UInt8] {
        let path = try validatedPath(header)
        try validate(header)

        var records: [UInt8] = []
        let pathNeedsPax = needsPax(path, limit: 100)
        // A name that is not UTF-8 and too long for its ustar field goes into a pax record as its
        // raw bytes, declared so (`hdrcharset=BINARY`) as bsdtar writes it: bsdtar would otherwise
        // try to convert it from UTF-8 and fail. (Short ones stay in the ustar field, which no
        // reader converts.)
        let names = [path, header.linkTarget ?? "", header.userName ?? "", header.groupName ?? ""]
        if zip(names, [100, 100, 31, 31]).contains(where: { RawName.holdsEscapes($0) && needsPax($0, limit: $1) }) {
            PaxRecords.append(key: "hdrcharset", value: "BINARY", to: &records)
        }
        if pathNeedsPax {
            PaxRecords.append(key: "path", value: path, to: &records)
        }
        let linkTarget = header.linkTarget ?? ""
        if needsPax(linkTarget, limit: 100) {
            PaxRecords.append(key: "linkpath", value: linkTarget, to: &records)
        }
        if header.size > UstarBlock.maxOctal11 {
            PaxRecords.append(key: "size", value: String(header.size), to: &records)
        }
        if header.mtime.nanoseconds != 0 || header.mtime.seconds < 0
            || header.mtime.seconds > Int64(UstarBlock.maxOctal11)
        {
            PaxRecords.append(key: "mtime", value: PaxRecords.formatTime(header.mtime), to: &records)
        }
        if header.uid > UstarBlock.maxOctal7 {
            PaxRecords.append(key: "uid", value: String(header.uid), to: &records)
        }
        if header.gid > UstarBlock.maxOctal7 {
            PaxRecords.append(key: "gid", value: String(header.gid), to: &records)
        }
        let userName = header.userName ?? ""
        if needsPax(userName, limit: 31) {
            PaxRecords.append(key: "uname", value: userName, to: &records)
        }
        let groupName = header.groupName ?? ""
        if needsPax(groupName, limit: 31) {
            PaxRecords.append(key: "gname", value: groupName, to: &records)
        }
        for attribute in header.extendedAttributeList {
            PaxRecords.append(key: PaxRecords.xattrKeyword(attribute.name), bytes: attribute.value, to: &records)
        }
        if let acl = header.accessACL, !acl.isEmpty { PaxRecords.append(key: "SCHILY.acl.access", value: acl, to: &records) }
        if let acl = header.defaultACL, !acl.isEmpty { PaxRecords.append(key: "SCHILY.acl.default", value: acl, to: &records) }

        let ustarMtime = UInt64(clamping: max(0, min(header.mtime.seconds, Int64(UstarBlock.maxOctal11))))
        var block = UstarBlock.emptyBlock()
        UstarBlock.writeBytes(pathNeedsPax ? placeholder(path) : RawName.encode(path), into: &block, UstarBlock.name)
        UstarBlock.writeOctal(UInt64(header.mode & 0o7777), into: &block, UstarBlock.mode)
        UstarBlock.writeOctal(min(header.uid, UstarBlock.maxOctal7), into: &block, UstarBlock.uid)
        UstarBlock.writeOctal(min(header.gid, UstarBlock.maxOctal7), into: &block, UstarBlock.gid)
        // Above 8 GiB - 1 GNU tar writes 0 here and relies on the pax size record; so do we.
        let ustarSize = header.size > UstarBlock.maxOctal11 ? 0 : header.size
        UstarBlock.writeOctal(ustarSize, into: &block, UstarBlock.sizeField)
        UstarBlock.writeOctal(ustarMtime, into: &block, UstarBlock.mtime)
        block[UstarBlock.typeflag] = header.kind.typeflag
        if !linkTarget.isEmpty {
            let inPax = needsPax(linkTarget, limit: 100)
            UstarBlock.writeBytes(inPax ? placeholder(linkTarget) : RawName.encode(linkTarget), into: &block, UstarBlock.linkname)
        }
        if !needsPax(userName, limit: 31) {
            UstarBlock.writeBytes(RawName.encode(userName), into: &block, UstarBlock.uname)
        }
        if !needsPax(groupName, limit: 31) {
            UstarBlock.writeBytes(RawName.encode(groupName), into: &block, UstarBlock.gname)
        }
        UstarBlock.writeOctal(UInt64(header.deviceMajor), into: &block, UstarBlock.devmajor)
        UstarBlock.writeOctal(UInt64(header.deviceMinor), into: &block, UstarBlock.devminor)
        UstarBlock.writeChecksum(into: &block)

        guard !records.isEmpty else { return block }
        var output = extendedHeader(
            typeflag: UInt8(ascii: "x"),
            name: paxHeaderName(for: path),
            mtime: ustarMtime,
            records: records
        )
        output.append(contentsOf: block)
        return output
    }

    /// Encodes a pax global header (typeflag `g`, name `pax_global_header`) carrying `records`
    /// in the given order, for example `("AMK.version", "1")`. Readers that do not know a
    /// keyword ignore it. The result's length is a multiple of 512.
    ///
    /// - Throws: ``TarError`` with code `.invalidValue` for an empty keyword or one containing
    ///   `=`, a newline or NUL, or a NUL in the value of `path`, `linkpath`, `uname` or `gname`
    ///   (the parser refuses such names, so writing them would make an unreadable archive).
    public static func encodeGlobalHeader(_ records: [(key: String, value: String)]) throws -> [UInt8] {
        var data: [UInt8] = []
        for record in records {
            let key = record.key
            if key.isEmpty || key.utf8.contains(where: { $0 == UInt8(ascii: "=") || $0 == UInt8(ascii: "\n") || $0 == 0 }) {
                throw TarError(
                    code: .invalidValue, message: "pax keyword \"\(UstarBlock.escaped(key))\" is empty or contains '=', a newline or NUL")
            }
            if ["path", "linkpath", "uname", "gname"].contains(key), record.value.utf8.contains(0) {
                throw TarError(code: .invalidValue, message: "pax keyword \"\(key)\": a name cannot contain a NUL byte")
            }
            PaxRecords.append(key: key, value: record.value, to: &data)
        }
        return extendedHeader(typeflag: UInt8(ascii: "g"), name: "pax_global_header".utf8, mtime: 0, records: data)
    }

    // MARK: - Rules

    private static func validatedPath(_ header: TarHeader) throws(TarError) -> String {
        var path = header.path
        guard !path.isEmpty else {
            throw TarError(code: .invalidValue, message: "empty path")
        }
        if header.kind == .directory {
            if !UTF8Bytes.endsWithSlash(path) { path += "/" }
        } else if UTF8Bytes.endsWithSlash(path) {
            // Readers treat a trailing slash as a directory, so this could not round-trip.
            throw TarError(code: .invalidValue, message: "path \"\(path)\" ends in '/' but the member is not a directory")
        }
        return path
    }

    private static func validate(_ header: TarHeader) throws(TarError) {
        func fail(_ message: String) -> TarError {
            TarError(code: .invalidValue, message: "\(message) (path \"\(header.path)\")")
        }
        for (name, value) in [
            ("path", header.path), ("link target", header.linkTarget),
            ("user name", header.userName), ("group name", header.groupName),
            ("access ACL", header.accessACL), ("default ACL", header.defaultACL)
        ] {
            if let value, value.utf8.contains(0) { throw fail("\(name) contains a NUL byte") }
        }
        var attributeNames = Set<ExactName>()
        for attribute in header.extendedAttributeList {
            let name = attribute.name
            // `=` and `%` are escaped in the keyword (`PaxRecords.xattrKeyword`); a NUL cannot be.
            if name.isEmpty || name.utf8.contains(0) {
                throw fail("extended attribute name \"\(UstarBlock.escaped(name))\" is empty or contains NUL")
            }
            // A reader keeps the last of two records for one name: the first value would be lost.
            guard attributeNames.insert(ExactName(name)).inserted else {
                throw fail("extended attribute name \"\(UstarBlock.escaped(name))\" appears twice")
            }
        }
        switch header.kind {
        case .regular:
            break
        case .other(let typeflag):
            // Metadata typeflags would make readers misparse what follows; standard ones have
            // a named case and must use it so decoding gives back the same value.
            if TarEntryKind(typeflag: typeflag) != .other(typeflag)
                || [
                    UInt8(ascii: "x"), UInt8(ascii: "g"), UInt8(ascii: "X"), UInt8(ascii: "L"),
                    UInt8(ascii: "K"), UInt8(ascii: "S")
                ].contains(typeflag)
            {
                throw fail("typeflag \(typeflag) cannot be written as .other")
            }
            // Readers disagree on whether a volume label's content follows it (TarParser refuses it).
            if TarParser.holdsNoContent(header.kind), header.size != 0 {
                throw fail("a volume label cannot have content (size \(header.size))")
            }
        case .hardLink, .symbolicLink, .directory, .characterDevice, .blockDevice, .fifo:
            if header.size != 0 { throw fail("a \(header.kind) member cannot have content (size \(header.size))") }
        }
        switch header.kind {
        case .hardLink, .symbolicLink:
            guard let target = header.linkTarget, !target.isEmpty else { throw fail("link without a target") }
        default:
            if header.linkTarget != nil { throw fail("link target on a member that is not a link") }
        }
        if UInt64(header.deviceMajor) > UstarBlock.maxOctal7 || UInt64(header.deviceMinor) > UstarBlock.maxOctal7 {
            throw fail("device number above 2097151")
        }
    }

    /// Whether a name needs a pax record: it is too long for its ustar field, or it is UTF-8
    /// that is not ASCII (the pax record says it is UTF-8, the ustar field would not). A name
    /// that is not UTF-8 at all fits its ustar field as raw bytes, as GNU tar writes it.
    private static func needsPax(_ text: String, limit: Int) -> Bool {
        let bytes = RawName.encode(text)
        if bytes.count > limit { return true }
        return bytes.contains(where: { $0 >= 0x80 }) && !RawName.holdsEscapes(text)
    }

    /// The ustar-field stand-in for a value carried in a pax record: ASCII (each non-ASCII
    /// byte becomes "_"), at most 100 bytes, never empty.
    private static func placeholder(_ text: String) -> [UInt8] {
        RawName.encode(text).prefix(100).map { $0 >= 0x80 ? UInt8(ascii: "_") : $0 }
    }

    /// `PaxHeaders/<basename>`: readers ignore this name, but keeping it recognisable and
    /// ASCII makes a listing by a pax-unaware tool readable.
    private static func paxHeaderName(for path: String) -> [UInt8] {
        var trimmed = RawName.encode(path)[...]
        while trimmed.count > 1, trimmed.last == UInt8(ascii: "/") { trimmed = trimmed.dropLast() }
        let base = trimmed.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true).last ?? trimmed
        let prefix = Array("PaxHeaders/".utf8)
        let name = base.prefix(100 - prefix.count).map { $0 >= 0x80 ? UInt8(ascii: "_") : $0 }
        return prefix + (name.isEmpty ? Array("entry".utf8) : name)
    }

    private static func extendedHeader(typeflag: UInt8, name: some Collection<UInt8>, mtime: UInt64, records: [UInt8]) -> [UInt8] {
        var block = UstarBlock.emptyBlock()
        UstarBlock.writeBytes(name, into: &block, UstarBlock.name)
        UstarBlock.writeOctal(0o644, into: &block, UstarBlock.mode)
        UstarBlock.writeOctal(0, into: &block, UstarBlock.uid)
        UstarBlock.writeOctal(0, into: &block, UstarBlock.gid)
        UstarBlock.writeOctal(UInt64(records.count), into: &block, UstarBlock.sizeField)
        UstarBlock.writeOctal(mtime, into: &block, UstarBlock.mtime)
        block[UstarBlock.typeflag] = typeflag
        UstarBlock.writeOctal(0, into: &block, UstarBlock.devmajor)
        UstarBlock.writeOctal(0, into: &block, UstarBlock.devminor)
        UstarBlock.writeChecksum(into: &block)

        var output = block
        output.reserveCapacity(blockSize + records.count + blockSize)
        output.append(contentsOf: records)
        output.append(contentsOf: repeatElement(0, count: padding(forContentSize: UInt64(records.count))))
        return output
    }
}
