/// pax extended-header records: `"<length> <keyword>=<value>\n"`, where the decimal length
/// counts the whole record including its own digits.
package enum PaxRecords {
    /// The keyword prefix of an extended attribute (`SCHILY.xattr.user.comment`), as GNU tar
    /// and bsdtar write them.
    static let xattrPrefix = "SCHILY.xattr."

    /// The keyword for the extended attribute `name`: the prefix, then the name with `%` and `=`
    /// written `%25` and `%3D`, as GNU tar writes them (a keyword ends at its first `=`). Every
    /// other byte, a newline included, is written as it is, which GNU tar and bsdtar read back.
    static func xattrKeyword(_ name: String) -> String {
        var bytes = Array(xattrPrefix.utf8)
        for byte in RawName.encode(name) {
            switch byte {
            case UInt8(ascii: "%"): bytes += Array("%25".utf8)
            case UInt8(ascii: "="): bytes += Array("%3D".utf8)
            default: bytes.append(byte)
            }
        }
        return RawName.decode(bytes)
    }

    /// The attribute name a `SCHILY.xattr.` keyword's remainder stands for: each `%` and two hex
    /// digits is that byte. GNU tar writes `%25` and `%3D` so and bsdtar every byte outside
    /// printable ASCII as well (`user.caf%C3%A9`); both write a literal `%` as `%25`, so decoding
    /// every escape reads both. A `%` not followed by two hex digits stays as it is, and so does
    /// `%00`: a NUL would cut the name where the kernel reads it (`user.a%00x` would set `user.a`,
    /// another attribute's name), and GNU tar and bsdtar keep those three bytes as they are.
    static func xattrName(_ encoded: some Collection<UInt8>) -> String {
        let bytes = Array(encoded)
        guard bytes.contains(UInt8(ascii: "%")) else { return RawName.decode(bytes) }
        func hex(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count, let high = hex(bytes[index + 1]),
                let low = hex(bytes[index + 2]), high | low != 0
            {
                out.append(high << 4 | low)
                index += 3
            } else {
                out.append(bytes[index])
                index += 1
            }
        }
        return RawName.decode(out)
    }

    /// Appends one record whose value is bytes (an extended attribute's value need not be text),
    /// finding the self-referential length by iterating until the digit count is stable (it can
    /// grow at most twice, e.g. 9 -> 10 -> 11).
    static func append(key: String, bytes value: [UInt8], to buffer: inout [UInt8]) {
        let keyBytes = RawName.encode(key)
        let body = 1 + keyBytes.count + 1 + value.count + 1
        var length = body + 1
        while body + decimalDigits(length) != length {
            length = body + decimalDigits(length)
        }
        buffer.append(contentsOf: String(length).utf8)
        buffer.append(UInt8(ascii: " "))
        buffer.append(contentsOf: keyBytes)
        buffer.append(UInt8(ascii: "="))
        buffer.append(contentsOf: value)
        buffer.append(UInt8(ascii: "\n"))
    }

    /// Appends one record whose value is text, as the bytes it names (``RawName``: its UTF-8,
    /// unless it names bytes that are not UTF-8).
    static func append(key: String, value: String, to buffer: inout [UInt8]) {
        append(key: key, bytes: RawName.encode(value), to: &buffer)
    }

    private static func decimalDigits(_ value: Int) -> Int {
        var digits = 1
        var rest = value / 10
        while rest > 0 {
            digits += 1
            rest /= 10
        }
        return digits
    }

    /// Calls `body` for each record in order, with the value's raw bytes (valid only during the
    /// call): whether a value may hold NUL or invalid UTF-8 depends on its keyword, so the
    /// caller decides. Every length is checked against the bytes that are actually there, so a
    /// lying length is an error, never an out-of-bounds read. Trailing NUL bytes after the last
    /// record are tolerated (some writers pad with them); a NUL anywhere else outside a value,
    /// including inside a keyword, is an error.
    static func parse(
        _ data: UnsafeRawBufferPointer,
        headerOffset: UInt64,
        _ body: (_ key: String, _ value: UnsafeRawBufferPointer) throws(TarError) -> Void
    ) throws(TarError) {
        func fail(_ what: String, at position: Int) -> TarError {
            TarError(code: .badPaxRecord, message: "pax record at byte \(position) of the extended header: \(what)", offset: headerOffset)
        }
        let count = data.count
        var position = 0
        while position < count {
            if data[position] == 0 {
                var rest = position
                while rest < count, data[rest] == 0 { rest += 1 }
                if rest == count { return }
                throw fail("unexpected NUL byte", at: position)
            }
            var cursor = position
            var length = 0
            while cursor < count, data[cursor] >= UInt8(ascii: "0"), data[cursor] <= UInt8(ascii: "9") {
                length = length * 10 + Int(data[cursor] - UInt8(ascii: "0"))
                if length > count - position {
                    throw fail("length exceeds the \(count - position) bytes remaining", at: position)
                }
                cursor += 1
            }
            guard cursor > position else { throw fail("length is not a decimal number", at: position) }
            guard cursor < count, data[cursor] == UInt8(ascii: " ") else {
                throw fail("length is not followed by a space", at: position)
            }
            let end = position + length
            let keyStart = cursor + 1
            // Shortest possible record after the length: space, one-byte keyword, "=", "\n".
            guard end >= keyStart + 3 else { throw fail("length \(length) is too short", at: position) }
            guard data[end - 1] == UInt8(ascii: "\n") else {
                throw fail("length \(length) does not end at a newline", at: position)
            }
            var equals = keyStart
            while equals < end - 1, data[equals] != UInt8(ascii: "=") { equals += 1 }
            guard equals < end - 1, equals > keyStart else { throw fail("missing keyword or '='", at: position) }
            let keyBytes = UnsafeRawBufferPointer(rebasing: data[keyStart..<equals])
            let key = RawName.decode(keyBytes)
            if let nul = keyBytes.firstIndex(of: 0) {
                // A keyword is text; with a NUL it would name one keyword here and another to
                // a C reader.
                throw fail("keyword \"\(UstarBlock.escaped(key))\" holds a NUL byte at byte \(nul)", at: position)
            }
            try body(key, UnsafeRawBufferPointer(rebasing: data[(equals + 1)..<(end - 1)]))
            position = end
        }
    }

    // MARK: - Values

    /// A non-negative decimal integer with no sign, spaces or fraction.
    static func parseDecimal(_ text: String) -> UInt64? {
        guard !text.isEmpty else { return nil }
        var value: UInt64 = 0
        for byte in text.utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
            if overflow1 || overflow2 { return nil }
            value = sum
        }
        return value
    }

    /// `"%d.%09d"`, or just `"%d"` for whole seconds. A negative time with a fraction is
    /// written as the signed decimal value it denotes (seconds -2 + 0.5 is "-1.500000000"),
    /// which is how GNU tar reads and writes it.
    package static func formatTime(_ time: TarTimestamp) -> String {
        guard time.nanoseconds != 0 else { return String(time.seconds) }
        if time.seconds >= 0 {
            return String(time.seconds) + "." + nineDigits(time.nanoseconds)
        }
        // seconds < 0, so seconds + 1 cannot overflow and its negation is at most Int64.max.
        let whole = -(time.seconds + 1)
        return "-" + String(whole) + "." + nineDigits(1_000_000_000 - time.nanoseconds)
    }

    private static func nineDigits(_ value: UInt32) -> String {
        let digits = String(value)
        return String(repeating: "0", count: 9 - digits.count) + digits
    }

    /// Parses `[-]digits[.digits]`. Digits past nanosecond precision are truncated toward
    /// zero, as GNU tar does.
    static func parseTime(_ text: String) -> TarTimestamp? {
        var bytes = Substring(text).utf8[...]
        var negative = false
        if bytes.first == UInt8(ascii: "-") {
            negative = true
            bytes = bytes.dropFirst()
        }
        var whole: UInt64 = 0
        var wholeDigits = 0
        while let byte = bytes.first, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") {
            let (times10, overflow1) = whole.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
            if overflow1 || overflow2 { return nil }
            whole = sum
            wholeDigits += 1
            bytes = bytes.dropFirst()
        }
        var fraction: UInt32 = 0
        var fractionDigits = 0
        if bytes.first == UInt8(ascii: ".") {
            bytes = bytes.dropFirst()
            while let byte = bytes.first, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") {
                if fractionDigits < 9 {
                    fraction = fraction * 10 + UInt32(byte - UInt8(ascii: "0"))
                }
                fractionDigits += 1
                bytes = bytes.dropFirst()
            }
            guard fractionDigits > 0 else { return nil }
        }
        guard bytes.isEmpty, wholeDigits > 0 else { return nil }
        for _ in min(fractionDigits, 9)..<9 { fraction *= 10 }

        if !negative {
            guard let seconds = Int64(exactly: whole) else { return nil }
            return TarTimestamp(seconds: seconds, nanoseconds: fraction)
        }
        if fraction == 0 {
            guard whole <= UInt64(Int64.max) + 1 else { return nil }
            return TarTimestamp(seconds: whole == UInt64(Int64.max) + 1 ? Int64.min : -Int64(whole), nanoseconds: 0)
        }
        // -(whole + fraction) = -(whole + 1) + (1 - fraction)
        guard whole < UInt64(Int64.max) else { return nil }
        return TarTimestamp(seconds: -Int64(whole) - 1, nanoseconds: 1_000_000_000 - fraction)
    }
}
