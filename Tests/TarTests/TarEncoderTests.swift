import Tar
import TestSupport
import Testing

struct TarEncoderTests {
    private func keys(_ header: TarHeader) throws -> [String] {
        let encoded = try TarEncoder.encode(header)
        #expect(encoded.count % 512 == 0)
        return paxRecords(encoded)?.map(\.key) ?? []
    }

    private func record(_ header: TarHeader, _ key: String) throws -> String? {
        try paxRecords(TarEncoder.encode(header))?.first { $0.key == key }?.value
    }

    private func decodeAll(_ header: TarHeader, content: UInt64 = 0) throws -> TarHeader? {
        var parser = TarParser()
        var decoded: TarHeader?
        let encoded = try TarEncoder.encode(header)
        try encoded.withUnsafeBytes { bytes in
            try parser.consume(bytes) { event in
                if case .member(let member) = event { decoded = member.header }
            }
        }
        return decoded
    }

    // MARK: Fields

    @Test func modeKeepsSpecialBitsAndDropsTypeBits() throws {
        let block = try TarEncoder.encode(TarHeader(path: "s", kind: .regular, mode: 0o104755))
        #expect(field(block, 100, 8) == "0004755")
        let sticky = try TarEncoder.encode(TarHeader(path: "t", kind: .directory, mode: 0o1777))
        #expect(field(sticky, 100, 8) == "0001777")
    }

    @Test func devicesAndFifoCarryTheirNumbers() throws {
        let block = try TarEncoder.encode(TarHeader(path: "dev/null", kind: .characterDevice, mode: 0o666, deviceMajor: 1, deviceMinor: 3))
        #expect(block[156] == UInt8(ascii: "3"))
        #expect(field(block, 329, 8) == "0000001" && field(block, 337, 8) == "0000003")
        #expect(try TarEncoder.encode(TarHeader(path: "p", kind: .fifo))[156] == UInt8(ascii: "6"))
    }

    // MARK: When each pax keyword is emitted

    @Test func pathRecordOnlyWhenLongOrNonASCII() throws {
        let hundred = String(repeating: "p", count: 100)
        #expect(try keys(TarHeader(path: hundred, kind: .regular)) == [])
        #expect(field(try TarEncoder.encode(TarHeader(path: hundred, kind: .regular)), 0, 100) == hundred)
        #expect(try keys(TarHeader(path: hundred + "q", kind: .regular)) == ["path"])
        #expect(try record(TarHeader(path: hundred + "q", kind: .regular), "path") == hundred + "q")
        #expect(try keys(TarHeader(path: "\u{FC}.txt", kind: .regular)) == ["path"])
        #expect(try record(TarHeader(path: "emoji-\u{1F389}/x", kind: .regular), "path") == "emoji-\u{1F389}/x")
    }

    /// The ustar name must never be empty and must be ASCII when a pax path carries the real one.
    @Test func namePlaceholderIsNonEmptyASCII() throws {
        let unicode = try TarEncoder.encode(TarHeader(path: "\u{540D}", kind: .regular))
        #expect(field(ustarBlock(unicode), 0, 100) == "___")
        let long = String(repeating: "\u{E9}", count: 80)
        let placeholder = rawField(ustarBlock(try TarEncoder.encode(TarHeader(path: long, kind: .regular))), 0, 100)
        #expect(placeholder == [UInt8](repeating: UInt8(ascii: "_"), count: 100))
    }

    @Test(arguments: [TarEntryKind.symbolicLink, .hardLink])
    func linkpathRecordOnlyWhenLongOrNonASCII(kind: TarEntryKind) throws {
        let short = TarHeader(path: "l", kind: kind, linkTarget: "target")
        #expect(try keys(short) == [])
        #expect(field(try TarEncoder.encode(short), 157, 100) == "target")

        let longTarget = String(repeating: "t", count: 163)
        let long = TarHeader(path: "l", kind: kind, linkTarget: longTarget)
        #expect(try keys(long) == ["linkpath"])
        #expect(try record(long, "linkpath") == longTarget)
        // bsdtar turns a symlink with an empty linkname into an empty file: never empty.
        #expect(field(ustarBlock(try TarEncoder.encode(long)), 157, 100) == String(repeating: "t", count: 100))

        let unicode = TarHeader(path: "l", kind: kind, linkTarget: "\u{FC}n\u{EF}")
        #expect(try keys(unicode) == ["linkpath"])
        #expect(field(ustarBlock(try TarEncoder.encode(unicode)), 157, 100) == "__n__")
    }

    @Test func sizeRecordAbove8GiBMinus1WithZeroUstarSize() throws {
        let limit: UInt64 = 0o77777777777
        let atLimit = try TarEncoder.encode(TarHeader(path: "f", kind: .regular, size: limit))
        #expect(paxRecords(atLimit) == nil)
        #expect(field(atLimit, 124, 12) == "77777777777")

        let above = try TarEncoder.encode(TarHeader(path: "f", kind: .regular, size: limit + 1))
        #expect(paxRecords(above)?.map(\.key) == ["size"])
        #expect(paxRecords(above)?.first?.value == "8589934592")
        #expect(rawField(ustarBlock(above), 124, 12) == Array("00000000000\0".utf8))
    }

    @Test func mtimeRecordForNanosecondsOrOutOfRange() throws {
        #expect(try keys(TarHeader(path: "f", kind: .regular, mtime: .init(seconds: 0))) == [])
        #expect(try keys(TarHeader(path: "f", kind: .regular, mtime: .init(seconds: 0o77777777777))) == [])
        #expect(
            try record(TarHeader(path: "f", kind: .regular, mtime: .init(seconds: 1_700_000_000, nanoseconds: 123)), "mtime")
                == "1700000000.000000123")

        let negative = try TarEncoder.encode(TarHeader(path: "f", kind: .regular, mtime: .init(seconds: -10)))
        #expect(paxRecords(negative)?.first?.value == "-10")
        #expect(field(ustarBlock(negative), 136, 12) == "00000000000")

        let future = try TarEncoder.encode(TarHeader(path: "f", kind: .regular, mtime: .init(seconds: 0o100000000000)))
        #expect(paxRecords(future)?.first?.value == "8589934592")
        #expect(field(ustarBlock(future), 136, 12) == "77777777777")
    }

    @Test func uidGidRecordsAbove2097151() throws {
        #expect(try keys(TarHeader(path: "f", kind: .regular, uid: 2_097_151, gid: 2_097_151)) == [])
        let big = try TarEncoder.encode(TarHeader(path: "f", kind: .regular, uid: 3_000_000, gid: 3_000_001))
        #expect(paxRecords(big)?.map(\.key) == ["uid", "gid"])
        #expect(paxRecords(big)?.map(\.value) == ["3000000", "3000001"])
        #expect(field(ustarBlock(big), 108, 8) == "7777777")
        #expect(field(ustarBlock(big), 116, 8) == "7777777")
        #expect(try keys(TarHeader(path: "f", kind: .regular, gid: 2_097_152)) == ["gid"])
    }

    @Test func unameGnameRecordsWhenNonASCIIOrLongerThan31() throws {
        let thirtyOne = String(repeating: "u", count: 31)
        let fits = try TarEncoder.encode(TarHeader(path: "f", kind: .regular, userName: thirtyOne, groupName: "g"))
        #expect(paxRecords(fits) == nil)
        #expect(field(fits, 265, 32) == thirtyOne)

        let long = try TarEncoder.encode(TarHeader(path: "f", kind: .regular, userName: thirtyOne + "u", groupName: "J\u{F6}rg"))
        #expect(paxRecords(long)?.map(\.key) == ["uname", "gname"])
        #expect(paxRecords(long)?.map(\.value) == [thirtyOne + "u", "J\u{F6}rg"])
        #expect(field(ustarBlock(long), 265, 32) == "")
        #expect(field(ustarBlock(long), 297, 32) == "")
    }

    @Test func allRecordsTogetherInDocumentedOrder() throws {
        let header = TarHeader(
            path: String(repeating: "d/", count: 60) + "f", kind: .symbolicLink, mode: 0o777,
            uid: 5_000_000, gid: 6_000_000, mtime: .init(seconds: 5, nanoseconds: 5),
            linkTarget: "\u{1F389}", userName: "\u{E9}", groupName: String(repeating: "g", count: 40)
        )
        #expect(try keys(header) == ["path", "linkpath", "mtime", "uid", "gid", "uname", "gname"])
    }

    @Test func paxHeaderBlockIsWellFormed() throws {
        let encoded = try TarEncoder.encode(TarHeader(path: "dir/\u{E9}t\u{E9}.txt", kind: .regular, mtime: .init(seconds: 1234)))
        #expect(encoded.count == 1536)
        #expect(encoded[156] == UInt8(ascii: "x"))
        #expect(field(encoded, 0, 100) == "PaxHeaders/__t__.txt")
        #expect(octalValue(encoded, 148, 6) == independentChecksum(Array(encoded[0..<512])))
        #expect(rawField(encoded, 257, 8) == Array("ustar\000".utf8))
        let size = try #require(octalValue(encoded, 124, 12))
        #expect(encoded[(512 + Int(size))..<1024].allSatisfy { $0 == 0 })
    }

    // MARK: Structure

    @Test func directoriesEndInSlash() throws {
        let encoded = try TarEncoder.encode(TarHeader(path: "some/dir", kind: .directory, mode: 0o755))
        #expect(field(encoded, 0, 100) == "some/dir/")
        #expect(encoded[156] == UInt8(ascii: "5"))
        #expect(try decodeAll(TarHeader(path: "some/dir", kind: .directory))?.path == "some/dir/")
        let long = String(repeating: "x", count: 100)
        #expect(try record(TarHeader(path: long, kind: .directory), "path") == long + "/")
    }

    @Test func paddingReachesBlockBoundary() {
        #expect(TarEncoder.padding(forContentSize: 0) == 0)
        #expect(TarEncoder.padding(forContentSize: 1) == 511)
        #expect(TarEncoder.padding(forContentSize: 511) == 1)
        #expect(TarEncoder.padding(forContentSize: 512) == 0)
        #expect(TarEncoder.padding(forContentSize: 513) == 511)
        #expect(TarEncoder.padding(forContentSize: 0o77777777777 + 12_346) == 512 - (0o77777777777 + 12_346) % 512)
    }

    @Test func fileOf512BytesHasNoPaddingBlock() throws {
        let content = [UInt8](repeating: 0x41, count: 512)
        let bytes = try archive([(TarHeader(path: "b", kind: .regular, size: 512), content)])
        #expect(bytes.count == 512 + 512 + 1024)
    }

    @Test func endMarkerIs1024Zeros() {
        #expect(TarEncoder.endOfArchive.count == 1024)
        #expect(TarEncoder.endOfArchive.allSatisfy { $0 == 0 })
        #expect(TarEncoder.blockSize == 512)
    }

    @Test func globalHeaderCarriesRecordsInOrder() throws {
        let encoded = try TarEncoder.encodeGlobalHeader([
            (key: "AMK.version", value: "1"), (key: "AMK.source", value: "com.example.app \u{2713}")
        ])
        #expect(encoded.count == 1024)
        #expect(field(encoded, 0, 100) == "pax_global_header")
        #expect(encoded[156] == UInt8(ascii: "g"))
        #expect(octalValue(encoded, 148, 6) == independentChecksum(Array(encoded[0..<512])))
        let records = try #require(paxRecords(encoded))
        #expect(records.map(\.key) == ["AMK.version", "AMK.source"])
        #expect(records.map(\.value) == ["1", "com.example.app \u{2713}"])
        #expect(try TarEncoder.encodeGlobalHeader([]).count == 512)
    }

    @Test(arguments: ["", "a=b", "a\nb", "a\0b"])
    func globalHeaderRejectsBadKeywords(key: String) {
        #expect(tarError { _ = try TarEncoder.encodeGlobalHeader([(key: key, value: "v")]) }?.code == .invalidValue)
    }

    /// The parser refuses a name holding a NUL in a `g` header too, so the encoder never writes
    /// one; other values may hold any bytes.
    @Test(arguments: ["path", "linkpath", "uname", "gname"])
    func globalHeaderRejectsNulInNames(key: String) throws {
        let error = tarError { _ = try TarEncoder.encodeGlobalHeader([(key: key, value: "..\0/x")]) }
        #expect(error?.code == .invalidValue)
        #expect(error?.message.contains("\"\(key)\"") == true)
        #expect(try TarEncoder.encodeGlobalHeader([(key: key, value: "ok")]).count == 1024)
        #expect(try TarEncoder.encodeGlobalHeader([(key: "AMK.\(key)", value: "a\0b")]).count == 1024)
    }

    @Test(arguments: [
        TarHeader(path: "", kind: .regular),
        TarHeader(path: "d", kind: .directory, size: 1),
        TarHeader(path: "l", kind: .symbolicLink),
        TarHeader(path: "l", kind: .symbolicLink, linkTarget: ""),
        TarHeader(path: "h", kind: .hardLink, size: 5, linkTarget: "x"),
        TarHeader(path: "f", kind: .regular, linkTarget: "x"),
        TarHeader(path: "f/", kind: .regular),
        TarHeader(path: "a\0b", kind: .regular),
        TarHeader(path: "l", kind: .symbolicLink, linkTarget: "a\0b"),
        TarHeader(path: "f", kind: .regular, userName: "a\0"),
        TarHeader(path: "f", kind: .other(UInt8(ascii: "x"))),
        TarHeader(path: "f", kind: .other(UInt8(ascii: "L"))),
        TarHeader(path: "f", kind: .other(UInt8(ascii: "5"))),
        TarHeader(path: "label", kind: .other(UInt8(ascii: "V")), size: 1),
        TarHeader(path: "f", kind: .characterDevice, deviceMajor: 2_097_152)
    ])
    func rejectsHeadersThatCannotBeStoredFaithfully(header: TarHeader) {
        #expect(tarError { _ = try TarEncoder.encode(header) }?.code == .invalidValue)
    }

    // MARK: Names that are not UTF-8

    /// A short name that is not UTF-8 is its raw bytes in the ustar field, as GNU tar writes it:
    /// no pax record, which bsdtar would try to convert from UTF-8.
    @Test func aShortNameThatIsNotUTF8IsRawInTheUstarField() throws {
        let path = RawName.decode([0x63, 0x61, 0x66, 0xE9])
        let link = RawName.decode([0x74, 0xFF])
        let encoded = try TarEncoder.encode(TarHeader(path: path, kind: .symbolicLink, linkTarget: link))
        #expect(encoded.count == 512)
        #expect(Array(encoded[0..<5]) == [0x63, 0x61, 0x66, 0xE9, 0x00])
        #expect(Array(encoded[157..<160]) == [0x74, 0xFF, 0x00])
        let decoded = try encoded.withUnsafeBytes { try TarHeader.decode(ustarBlock: $0, offset: 0) }
        #expect(decoded.path == path && decoded.linkTarget == link)
    }

    /// A long one goes into a pax record as raw bytes, declared with `hdrcharset=BINARY`, and
    /// comes back whole.
    @Test func aLongNameThatIsNotUTF8IsRawInAPaxRecord() throws {
        let bytes = [UInt8](repeating: 0x78, count: 150) + [0xE9]
        let header = TarHeader(path: RawName.decode(bytes), kind: .regular, size: 0)
        let encoded = try TarEncoder.encode(header)
        let records = Array(encoded[512..<1024])
        #expect(records.starts(with: Array("21 hdrcharset=BINARY\n".utf8)))
        #expect(records.firstRange(of: Array("path=".utf8) + bytes + [0x0A]) != nil)
        let paths = members(try parse(encoded + TarEncoder.endOfArchive)).map(\.header.path)
        #expect(paths.map(RawName.encode) == [bytes])
    }

    // MARK: Round trip

    @Test func decodeOfEncodeIsIdentityForManyHeaders() throws {
        var rng = SeededGenerator(seed: 0xC0FFEE)
        let alphabet: [String] = ["a", "b", "Z", "0", "-", ".", "_", " ", "\u{E9}", "\u{540D}", "\u{1F389}", "\u{DF}"]
        for iteration in 0..<400 {
            let components = Int.random(in: 1...6, using: &rng)
            var path = (0..<components).map { _ in
                String(
                    (0..<Int.random(in: 1...(iteration % 5 == 0 ? 60 : 12), using: &rng)).map { _ in
                        Character(alphabet[Int.random(in: 0..<(iteration % 2 == 0 ? 8 : alphabet.count), using: &rng)])
                    })
            }.joined(separator: "/")
            if path.hasSuffix("/") || path.isEmpty { path += "x" }
            let kinds: [TarEntryKind] = [
                .regular, .directory, .symbolicLink, .hardLink, .fifo, .characterDevice, .blockDevice, .other(UInt8(ascii: "V"))
            ]
            let kind = kinds[Int.random(in: 0..<kinds.count, using: &rng)]
            if kind == .directory { path += "/" }
            let sizes: [UInt64] = [0, 1, 511, 512, 513, 0o77777777777, 0o77777777777 + 1, UInt64.random(in: 0...(1 << 50), using: &rng)]
            let size = kind == .regular ? sizes[Int.random(in: 0..<sizes.count, using: &rng)] : 0
            let ids: [UInt64] = [0, 1000, 2_097_151, 2_097_152, UInt64(UInt32.max) + 7]
            let names: [String?] = [nil, "root", String(repeating: "n", count: 31), String(repeating: "n", count: 32), "J\u{F6}rg"]
            let isLink = kind == .symbolicLink || kind == .hardLink
            let isDevice = kind == .characterDevice || kind == .blockDevice
            let header = TarHeader(
                path: path,
                kind: kind,
                size: size,
                mode: UInt32.random(in: 0...0o7777, using: &rng),
                uid: ids[Int.random(in: 0..<ids.count, using: &rng)],
                gid: ids[Int.random(in: 0..<ids.count, using: &rng)],
                mtime: TarTimestamp(
                    seconds: [0, 1_700_000_000, -1, -86_400 * 365, 0o77777777777, 0o77777777777 + 1][Int.random(in: 0..<6, using: &rng)],
                    nanoseconds: [0, 1, 999_999_999, UInt32.random(in: 0..<1_000_000_000, using: &rng)][Int.random(in: 0..<4, using: &rng)]
                ),
                linkTarget: isLink ? (iteration % 3 == 0 ? String(repeating: "../t", count: 40) : "t\u{E9}") : nil,
                userName: names[Int.random(in: 0..<names.count, using: &rng)],
                groupName: names[Int.random(in: 0..<names.count, using: &rng)],
                deviceMajor: isDevice ? UInt32.random(in: 0...2_097_151, using: &rng) : 0,
                deviceMinor: isDevice ? UInt32.random(in: 0...2_097_151, using: &rng) : 0
            )
            let decoded = try decodeAll(header)
            #expect(decoded == header, "iteration \(iteration)")
        }
    }
}
