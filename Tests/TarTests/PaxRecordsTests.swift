import Tar
import Testing

/// pax records (PaxRecords.swift is internal), tested through the encoder's output and the
/// parser's handling of hand-built records.
struct PaxRecordsTests {
    /// The self-counting length is checked against exact expected bytes, including the
    /// boundaries where adding the length's own digits adds another digit.
    @Test(arguments: [
        ("abcd", "9 a=abcd\n"),  // 9 bytes with a one-digit length
        ("abcde", "11 a=abcde\n"),  // 10 would need two digits, which makes it 11
        (String(repeating: "v", count: 93), "99 a=" + String(repeating: "v", count: 93) + "\n"),
        (String(repeating: "v", count: 94), "101 a=" + String(repeating: "v", count: 94) + "\n")  // 100 -> 101
    ])
    func recordLengthsCrossDigitBoundaries(value: String, expected: String) throws {
        let encoded = try TarEncoder.encodeGlobalHeader([(key: "a", value: value)])
        let size = Int(try #require(octalValue(encoded, 124, 12)))
        #expect(Array(encoded[512..<(512 + size)]) == Array(expected.utf8))
        #expect(paxRecords(encoded)?.first?.value == value)
    }

    /// Non-ASCII paths whose `path` records cross 9 -> 10 and 99 -> 100 bytes.
    @Test(arguments: [
        ("\u{E9}", 11),  // 1+1+4+1+2+1 = 10 -> 11
        (String(repeating: "\u{E9}", count: 45), 99),  // 90-byte value
        ("a" + String(repeating: "\u{E9}", count: 45), 101),  // 91: 100 -> 101
        ("ab" + String(repeating: "\u{E9}", count: 45), 102)
    ])
    func pathRecordLengthAcrossDigitBoundaries(path: String, expectedLength: Int) throws {
        let encoded = try TarEncoder.encode(TarHeader(path: path, kind: .regular))
        let records = try #require(paxRecords(encoded))
        #expect(records.map(\.value) == [path])
        #expect(octalValue(encoded, 124, 12) == UInt64(expectedLength))
        #expect(field(encoded, 512, 20).hasPrefix("\(expectedLength) path="))
    }

    @Test(arguments: [
        Array("50 path=short\n".utf8),  // claims more than is there
        Array("5 path=abcdefgh\n".utf8),  // claims too little to hold a record
        Array("12 path=abcde\n".utf8),  // length does not end at the newline
        Array("x path=a\n".utf8),  // no length
        Array("9path=abc\n".utf8),  // no space
        Array("10 pathabc\n".utf8),  // no '='
        Array("8 =value\n".utf8),  // empty keyword
        Array("99999999999999999999999 a=b\n".utf8),  // absurd length, must not overflow
        paxRecord("size", "12x"),  // value not a number
        paxRecord("uid", "-1"),
        paxRecord("mtime", "1.2.3"),
        paxRecord("size", "99999999999999999999999")
    ])
    func lyingOrMalformedPaxRecordIsBadPaxRecord(records: [UInt8]) throws {
        let bytes =
            RawBlock(name: "ok").bytes
            + RawBlock(name: "PaxHeaders/x", typeflag: UInt8(ascii: "x"), size: UInt64(records.count)).bytes + padded(records)
            + RawBlock(name: "x").bytes + TarEncoder.endOfArchive
        let error = try #require(tarError { _ = try parse(bytes) })
        #expect(error.code == .badPaxRecord, "\(error)")
        #expect(error.offset == 512)
    }

    @Test func unknownPaxKeywordsAndTrailingNulsAreIgnored() throws {
        let records = paxRecord("SCHILY.xattr.user.k", "v\u{0}x") + paxRecord("atime", "1.5") + paxRecord("path", "real") + [0, 0, 0]
        let bytes =
            RawBlock(name: "PaxHeaders/p", typeflag: UInt8(ascii: "x"), size: UInt64(records.count)).bytes + padded(records)
            + RawBlock(name: "placeholder", size: 2).bytes + padded([7, 8]) + TarEncoder.endOfArchive
        let events = try parse(bytes)
        #expect(members(events).first?.header.path == "real")
        #expect(contents(events)["real"] == [7, 8])
    }

    // MARK: NUL bytes (issue #10: the kernel reads a name up to its first NUL)

    /// A keyword is text: one holding a NUL is refused in `x` and `g` headers, naming the
    /// keyword (escaped) and the header's offset.
    @Test(arguments: ["x", "g"] as [Character])
    func nulInAKeywordIsRefused(typeflag: Character) throws {
        let records = paxRecord(Array("pa".utf8) + [0] + Array("th".utf8), Array("x".utf8))
        let bytes = RawBlock(name: "first").bytes + extendedHeader(typeflag, records) + RawBlock(name: "x").bytes + TarEncoder.endOfArchive
        let error = try #require(tarError { _ = try parse(bytes) })
        #expect(error.code == .badPaxRecord)
        #expect(error.offset == 512)
        #expect(error.message.contains(#"keyword "pa\u{0}th" holds a NUL byte"#), "\(error)")
    }

    /// "..\0/x" would pass a `..` check as a Swift string while the kernel acts on "..": a name
    /// value holding a NUL is refused whatever the header kind and wherever the NUL is.
    @Test(arguments: ["path", "linkpath", "uname", "gname"], ["x", "g"] as [Character])
    func nulInANameValueIsRefused(keyword: String, typeflag: Character) throws {
        for value in [Array("..".utf8) + [0] + Array("/x".utf8), [0], Array("name".utf8) + [0]] {
            let records = paxRecord("mtime", "1") + paxRecord(Array(keyword.utf8), value)
            let bytes =
                RawBlock(name: "first").bytes + extendedHeader(typeflag, records)
                + RawBlock(name: "x", typeflag: UInt8(ascii: "2")).bytes + TarEncoder.endOfArchive
            let error = try #require(tarError { _ = try parse(bytes) })
            #expect(error.code == .badPaxRecord, "\(keyword) \(value): \(error)")
            #expect(error.offset == 512)
            #expect(
                error.message.hasPrefix("pax keyword \"\(keyword)\": the value holds a NUL byte at byte \(value.firstIndex(of: 0)!)"),
                "\(error)")
            #expect(!error.message.utf8.contains(0), "the message shows the NUL escaped")
        }
    }

    /// Values of other keywords may be binary (SCHILY.xattr values are): a NUL there is kept
    /// as data and reported in the global header's event.
    @Test func nulInAnOtherValueIsData() throws {
        let records = paxRecord(Array("SCHILY.xattr.user.k".utf8), [1, 0, 2]) + paxRecord("AMK.note", "a\u{0}b")
        let bytes = extendedHeader("g", records) + RawBlock(name: "x").bytes + TarEncoder.endOfArchive
        let events = try parse(bytes)
        #expect(events.first == .global(["SCHILY.xattr.user.k=\u{1}\u{0}\u{2}", "AMK.note=a\u{0}b"], offset: 0))
        #expect(members(events).map(\.header.path) == ["x"])
    }
}
