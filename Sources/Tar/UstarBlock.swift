/// Layout of the 512-byte ustar header block and the primitive field codecs shared by the
/// encoder and the parser.
///
/// Parsing works directly on the caller's bytes: numbers are read in place and only the string
/// fields allocate, so the parser can walk gigabytes of archive without per-byte overhead.
enum UstarBlock {
    static let size = 512

    // Field offsets and widths (POSIX ustar; the GNU layout shares everything up to 345).
    static let name = 0..<100
    static let mode = 100..<108
    static let uid = 108..<116
    static let gid = 116..<124
    static let sizeField = 124..<136
    static let mtime = 136..<148
    static let checksum = 148..<156
    static let typeflag = 156
    static let linkname = 157..<257
    static let magic = 257..<263
    static let version = 263..<265
    static let uname = 265..<297
    static let gname = 297..<329
    static let devmajor = 329..<337
    static let devminor = 337..<345
    static let prefix = 345..<500

    /// Largest value an 11-digit octal field (size, mtime) can hold: 8 GiB - 1.
    static let maxOctal11: UInt64 = 0o77777777777
    /// Largest value a 7-digit octal field (mode, uid, gid, devices) can hold.
    static let maxOctal7: UInt64 = 0o7777777

    /// The header dialects that change how fields beyond the v7 set are read.
    enum Format: Equatable {
        /// POSIX ustar/pax (`"ustar\0"`): has a prefix field.
        case ustar
        /// Old GNU (`"ustar  \0"`): no prefix; bytes 345... hold atime/ctime/sparse data.
        case gnu
        /// Pre-POSIX: only name, mode, ids, size, mtime, checksum, typeflag and linkname.
        case v7
    }

    /// A header block's fields, decoded but not yet combined with extended headers.
    struct Fields {
        var format: Format
        var typeflag: UInt8
        var path: String
        var linkName: String
        var mode: UInt32
        var uid: UInt64
        var gid: UInt64
        var size: UInt64
        var mtime: Int64
        var userName: String?
        var groupName: String?
        var deviceMajor: UInt32
        var deviceMinor: UInt32
    }

    // MARK: - Decoding

    /// Whether the block is all zero bytes, i.e. part of the end-of-archive marker.
    static func isZero(_ block: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        while index < size {
            if block.loadUnaligned(fromByteOffset: index, as: UInt64.self) != 0 { return false }
            index += 8
        }
        return true
    }

    /// Verifies the checksum and decodes every field of one header block.
    ///
    /// - Precondition: `block.count >= 512` (callers check; this is internal).
    static func decode(_ block: UnsafeRawBufferPointer, offset: UInt64) throws(TarError) -> Fields {
        try verifyChecksum(block, offset: offset)

        let format: Format
        if matches(block, at: magic.lowerBound, "ustar\0") {
            format = .ustar
        } else if matches(block, at: magic.lowerBound, "ustar  \0") {
            format = .gnu
        } else {
            format = .v7
        }

        func unsigned(_ range: Range<Int>, _ field: String) throws(TarError) -> UInt64 {
            guard let value = parseUnsigned(block, range) else {
                throw TarError(code: .badField, message: "\(field) field is not a valid number (\(quoted(block, range)))", offset: offset)
            }
            return value
        }

        let mode = try unsigned(mode, "mode")
        let uid = try unsigned(uid, "uid")
        let gid = try unsigned(gid, "gid")
        let size = try unsigned(sizeField, "size")
        guard let mtime = parseSigned(block, mtime) else {
            throw TarError(code: .badField, message: "mtime field is not a valid number (\(quoted(block, mtime)))", offset: offset)
        }

        var path = string(block, name)
        var userName: String?
        var groupName: String?
        var deviceMajor: UInt32 = 0
        var deviceMinor: UInt32 = 0
        if format != .v7 {
            let user = string(block, uname)
            let group = string(block, gname)
            userName = user.isEmpty ? nil : user
            groupName = group.isEmpty ? nil : group
            let major = try unsigned(devmajor, "devmajor")
            let minor = try unsigned(devminor, "devminor")
            guard let major32 = UInt32(exactly: major), let minor32 = UInt32(exactly: minor) else {
                throw TarError(code: .badField, message: "device number out of range (\(major), \(minor))", offset: offset)
            }
            deviceMajor = major32
            deviceMinor = minor32
        }
        if format == .ustar {
            let prefixString = string(block, prefix)
            if !prefixString.isEmpty {
                path = prefixString + "/" + path
            }
        }
        let linkName = string(block, linkname)

        return Fields(
            format: format,
            typeflag: block[typeflag],
            path: path,
            linkName: linkName,
            // Old GNU writers include the file-type bits; only permission bits belong here.
            mode: UInt32(truncatingIfNeeded: mode & 0o7777),
            uid: uid,
            gid: gid,
            size: size,
            mtime: mtime,
            userName: userName,
            groupName: groupName,
            deviceMajor: deviceMajor,
            deviceMinor: deviceMinor
        )
    }

    /// Accepts the unsigned or the signed byte sum, as GNU tar does, because some historic
    /// writers summed signed chars.
    static func verifyChecksum(_ block: UnsafeRawBufferPointer, offset: UInt64) throws(TarError) {
        guard let stored = parseUnsigned(block, checksum), hasDigit(block, checksum) else {
            throw TarError(code: .badChecksum, message: "checksum field is not octal (\(quoted(block, checksum)))", offset: offset)
        }
        let (bytes, high) = byteSum(block)
        // A byte read as signed counts 256 less when its high bit is set.
        var unsignedSum = bytes
        var signedSum = bytes - 256 * high
        // The checksum field itself counts as eight spaces.
        for index in checksum {
            let byte = block[index]
            unsignedSum += 32 - Int(byte)
            signedSum += 32 - Int(Int8(bitPattern: byte))
        }
        if stored != UInt64(unsignedSum), Int(exactly: stored) != signedSum {
            throw TarError(
                code: .badChecksum,
                message: "checksum mismatch (stored \(octal(Int(clamping: stored))), computed \(octal(unsignedSum)))",
                offset: offset
            )
        }
    }

    /// The sum of a header block's 512 bytes and how many of them have their high bit set, eight
    /// bytes at a time: every member's header is summed, and a loop over single bytes was the
    /// largest share of parsing a header. Four 16-bit lanes hold the byte sums (at most 128 bytes
    /// of 255 each, 32,640) and eight 8-bit lanes the high-bit counts (at most 64 each).
    static func byteSum(_ block: UnsafeRawBufferPointer) -> (sum: Int, high: Int) {
        precondition(block.count >= size, "a header block is \(size) bytes")
        let bytes: UInt64 = 0x00FF_00FF_00FF_00FF
        var sums: UInt64 = 0
        var highs: UInt64 = 0
        for word in 0..<(size / 8) {
            let value = block.loadUnaligned(fromByteOffset: word &* 8, as: UInt64.self)
            sums &+= (value & bytes) &+ ((value >> 8) & bytes)
            highs &+= (value >> 7) & 0x0101_0101_0101_0101
        }
        highs = (highs & bytes) &+ ((highs >> 8) & bytes)
        func lanes(_ value: UInt64) -> Int {
            Int((value & 0xFFFF) + ((value >> 16) & 0xFFFF) + ((value >> 32) & 0xFFFF) + (value >> 48))
        }
        return (lanes(sums), lanes(highs))
    }

    /// Parses an octal field, or a GNU base-256 field (high bit of the first byte set).
    /// Leading spaces are skipped; digits end at a NUL or space and only NULs or spaces may
    /// follow. An all-blank field reads as 0, as GNU tar and libarchive do.
    static func parseUnsigned(_ block: UnsafeRawBufferPointer, _ range: Range<Int>) -> UInt64? {
        let first = block[range.lowerBound]
        if first & 0x80 != 0 {
            // 0x40 in a base-256 field is the sign bit; negative values are not unsigned.
            if first & 0x40 != 0 { return nil }
            var value = UInt64(first & 0x3F)
            for index in (range.lowerBound + 1)..<range.upperBound {
                if value > UInt64.max >> 8 { return nil }
                value = value << 8 | UInt64(block[index])
            }
            return value
        }
        var index = range.lowerBound
        while index < range.upperBound, block[index] == UInt8(ascii: " ") { index += 1 }
        var value: UInt64 = 0
        while index < range.upperBound {
            let byte = block[index]
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "7") else { break }
            // At most 12 digits fit in any field, so this cannot overflow 64 bits.
            value = value << 3 | UInt64(byte - UInt8(ascii: "0"))
            index += 1
        }
        while index < range.upperBound {
            let byte = block[index]
            guard byte == 0 || byte == UInt8(ascii: " ") else { return nil }
            index += 1
        }
        return value
    }

    /// Like ``parseUnsigned(_:_:)`` but also accepts negative base-256 values (GNU writes
    /// pre-1970 mtimes that way).
    static func parseSigned(_ block: UnsafeRawBufferPointer, _ range: Range<Int>) -> Int64? {
        let first = block[range.lowerBound]
        if first & 0xC0 == 0xC0 {
            // Two's complement over the whole field, sign-extended from the first byte.
            var value: Int64 = -1
            for index in range {
                if value < Int64.min >> 8 { return nil }
                value = value << 8 | Int64(block[index])
            }
            return value
        }
        guard let value = parseUnsigned(block, range) else { return nil }
        return Int64(exactly: value)
    }

    private static func hasDigit(_ block: UnsafeRawBufferPointer, _ range: Range<Int>) -> Bool {
        for index in range where block[index] >= UInt8(ascii: "0") && block[index] <= UInt8(ascii: "7") {
            return true
        }
        return false
    }

    /// A NUL-terminated (or field-filling) name, byte for byte (``RawName``): pre-pax archives
    /// carry names in arbitrary encodings, and they are written back as the same bytes. The field
    /// ends at its first NUL, as the kernel would read it, so nothing after the NUL can reach the
    /// text.
    static func string(_ block: UnsafeRawBufferPointer, _ range: Range<Int>) -> String {
        var end = range.lowerBound
        while end < range.upperBound, block[end] != 0 { end += 1 }
        return RawName.decode(UnsafeRawBufferPointer(rebasing: block[range.lowerBound..<end]))
    }

    /// Text for an error message: control and format characters (NUL, escape sequences,
    /// bidirectional overrides) are shown as `\u{XX}` and the text is cut after `limit`
    /// characters with "...", so a hostile name can neither hide itself nor drive the terminal.
    static func escaped(_ text: some StringProtocol, limit: Int = 100) -> String {
        var result = ""
        var count = 0
        for scalar in text.unicodeScalars {
            if count == limit {
                result += "..."
                break
            }
            count += 1
            switch scalar.properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator:
                result += "\\u{" + String(scalar.value, radix: 16) + "}"
            default:
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    private static func matches(_ block: UnsafeRawBufferPointer, at start: Int, _ literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard start + count <= block.count else { return false }
        return literal.withUTF8Buffer { expected in
            for index in 0..<count where block[start + index] != expected[index] { return false }
            return true
        }
    }

    /// A field's printable bytes, for error messages; binary bytes are shown as `\xNN`.
    static func quoted(_ block: UnsafeRawBufferPointer, _ range: Range<Int>) -> String {
        var end = range.upperBound
        while end > range.lowerBound, block[end - 1] == 0 { end -= 1 }
        var text = ""
        for index in range.lowerBound..<end {
            let byte = block[index]
            if byte >= 0x20, byte < 0x7F {
                text.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                let hex = String(byte, radix: 16)
                text += "\\x" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return text
    }

    private static func octal(_ value: Int) -> String {
        let digits = String(value, radix: 8)
        return String(repeating: "0", count: max(0, 6 - digits.count)) + digits
    }

    // MARK: - Encoding

    /// Writes `value` as zero-padded octal filling all but the last byte, which stays NUL.
    /// - Precondition: the value fits (callers clamp first).
    static func writeOctal(_ value: UInt64, into block: inout [UInt8], _ range: Range<Int>) {
        var remaining = value
        var index = range.upperBound - 2
        while index >= range.lowerBound {
            block[index] = UInt8(ascii: "0") + UInt8(remaining & 7)
            remaining >>= 3
            index -= 1
        }
        block[range.upperBound - 1] = 0
    }

    /// Copies bytes into a field, truncating to its width; the caller guarantees fit when
    /// truncation would lose information.
    static func writeBytes<Bytes: Collection<UInt8>>(_ bytes: Bytes, into block: inout [UInt8], _ range: Range<Int>) {
        var index = range.lowerBound
        for byte in bytes {
            guard index < range.upperBound else { break }
            block[index] = byte
            index += 1
        }
    }

    /// Fills the checksum field: six octal digits, NUL, space (the form GNU tar writes).
    static func writeChecksum(into block: inout [UInt8]) {
        for index in checksum { block[index] = UInt8(ascii: " ") }
        var sum: UInt64 = 0
        for byte in block { sum += UInt64(byte) }
        writeOctal(sum, into: &block, checksum.lowerBound..<(checksum.lowerBound + 7))
        block[checksum.upperBound - 1] = UInt8(ascii: " ")
    }

    /// A fresh block with the POSIX magic and version set.
    static func emptyBlock() -> [UInt8] {
        var block = [UInt8](repeating: 0, count: size)
        writeBytes("ustar".utf8, into: &block, magic)
        writeBytes("00".utf8, into: &block, version)
        return block
    }
}
