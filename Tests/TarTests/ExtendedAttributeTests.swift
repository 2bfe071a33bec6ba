import Tar
import Testing

/// Extended attributes as `SCHILY.xattr.*` pax records: written sorted, values as bytes (not
/// text), read back from our headers and from records written as GNU tar writes them.
struct ExtendedAttributeTests {
    private func roundTrip(_ header: TarHeader) throws -> TarHeader? {
        var parser = TarParser()
        var decoded: TarHeader?
        try TarEncoder.encode(header).withUnsafeBytes { bytes in
            try parser.consume(bytes) { event in
                if case .member(let member) = event { decoded = member.header }
            }
        }
        return decoded
    }

    @Test func binaryValuesRoundTripAndKeysAreSorted() throws {
        var header = TarHeader(path: "f", kind: .regular)
        header.extendedAttributes = ["user.b": [0xFF, 0x00, 0x0A, 0x3D], "user.a": Array("text".utf8), "user.empty": []]
        let keys = paxRecords(try TarEncoder.encode(header))?.map(\.key)
        #expect(keys == ["SCHILY.xattr.user.a", "SCHILY.xattr.user.b", "SCHILY.xattr.user.empty"])
        let decoded = try #require(try roundTrip(header))
        #expect(decoded.extendedAttributes == header.extendedAttributes)
        #expect(decoded == header)
    }

    @Test func noAttributesNoPaxHeader() throws {
        #expect(try TarEncoder.encode(TarHeader(path: "plain", kind: .regular)).count == 512)
    }

    @Test(arguments: ["", "user.a=b", "user.\n", "user.\u{0}x"])
    func badNamesAreRefused(name: String) throws {
        var header = TarHeader(path: "f", kind: .regular)
        header.extendedAttributes = [name: [1]]
        #expect(throws: TarError.self) { try TarEncoder.encode(header) }
    }

    @Test func recordsWrittenByHandAreRead() throws {
        var stream = extendedHeader("x", paxRecord(Array("SCHILY.xattr.user.comment".utf8), [0x68, 0x69, 0xFF]))
        stream += try TarEncoder.encode(TarHeader(path: "f", kind: .regular))
        stream += TarEncoder.endOfArchive
        var parser = TarParser()
        var decoded: TarHeader?
        try stream.withUnsafeBytes { bytes in
            try parser.consume(bytes) { event in
                if case .member(let member) = event { decoded = member.header }
            }
        }
        #expect(decoded?.extendedAttributes == ["user.comment": [0x68, 0x69, 0xFF]])
    }

    /// Parses a stream of one member whose `x` header holds `records`.
    private func member(withRecords records: [UInt8]) throws -> TarHeader? {
        var stream = extendedHeader("x", records)
        stream += try TarEncoder.encode(TarHeader(path: "f", kind: .regular))
        stream += TarEncoder.endOfArchive
        var parser = TarParser()
        var decoded: TarHeader?
        try stream.withUnsafeBytes { bytes in
            try parser.consume(bytes) { event in
                if case .member(let member) = event { decoded = member.header }
            }
        }
        return decoded
    }

    /// One Linux file can hold `user.café` precomposed and with a combining accent, or the Kelvin
    /// sign and `K`: different bytes, equal `String`s. Each pair stays two attributes with their own
    /// values, through the encoder and the parser, in the order given.
    @Test func namesEqualAsStringsStayTwoAttributes() throws {
        var header = TarHeader(path: "f", kind: .regular)
        header.extendedAttributeList = [
            ExtendedAttribute(name: "user.caf\u{E9}", value: [1]),
            ExtendedAttribute(name: "user.cafe\u{301}", value: [2]),
            ExtendedAttribute(name: "user.\u{212A}", value: [3]),
            ExtendedAttribute(name: "user.K", value: [4])
        ]
        #expect("user.caf\u{E9}" == "user.cafe\u{301}", "the premise: String's == is canonical equivalence")
        let encoded = try TarEncoder.encode(header)
        #expect(paxRecords(encoded)?.count == 4)
        let decoded = try #require(try roundTrip(header))
        #expect(decoded.extendedAttributeList.map { Array($0.name.utf8) } == header.extendedAttributeList.map { Array($0.name.utf8) })
        #expect(decoded.extendedAttributeList.map(\.value) == [[1], [2], [3], [4]])
        #expect(decoded == header)
        // The dictionary view holds one value per equal String.
        #expect(decoded.extendedAttributes.count == 2)
    }

    /// The prefix is cut at its byte length: a combining mark right after `SCHILY.xattr.` is one
    /// `Character` with the dot, so a character-wise `hasPrefix` missed the record and `dropFirst`
    /// would have eaten the mark. A name that is not UTF-8 keeps its bytes.
    @Test func theNameIsCutAfterThePrefixsBytes() throws {
        let prefix = Array("SCHILY.xattr.".utf8)
        let records =
            paxRecord(prefix + [0xCC, 0x81] + Array("x".utf8), [7])
            + paxRecord(prefix + Array("user.".utf8) + [0xFF, 0xFE], [8])
        let decoded = try #require(try member(withRecords: records))
        let names = decoded.extendedAttributeList.map { RawName.encode($0.name) }
        #expect(names == [[0xCC, 0x81, UInt8(ascii: "x")], Array("user.".utf8) + [0xFF, 0xFE]])
        #expect(decoded.extendedAttributeList.map(\.value) == [[7], [8]])
        // Written back, the records carry the same bytes.
        let encoded = try TarEncoder.encode(decoded)
        for name in names {
            let key = prefix + name + [UInt8(ascii: "=")]
            #expect((0...(encoded.count - key.count)).contains { encoded[$0..<($0 + key.count)].elementsEqual(key) }, "\(key)")
        }
    }

    /// A name recorded twice keeps its last value, as every pax keyword does; an equal `String`
    /// of other bytes is another attribute.
    @Test func theLastRecordOfANameWins() throws {
        let records =
            paxRecord("SCHILY.xattr.user.caf\u{E9}", "first")
            + paxRecord("SCHILY.xattr.user.cafe\u{301}", "other")
            + paxRecord("SCHILY.xattr.user.caf\u{E9}", "last")
        let decoded = try #require(try member(withRecords: records))
        let attributes = decoded.extendedAttributeList.map { (Array($0.name.utf8), String(decoding: $0.value, as: UTF8.self)) }
        #expect(attributes.map(\.0) == [Array("user.caf\u{E9}".utf8), Array("user.cafe\u{301}".utf8)])
        #expect(attributes.map(\.1) == ["last", "other"])
    }

    /// The encoder refuses a list naming one attribute twice: a reader would keep only the
    /// second value. Names equal only as `String`s are not twice.
    @Test func aNameListedTwiceIsRefused() throws {
        var header = TarHeader(path: "f", kind: .regular)
        header.extendedAttributeList = [ExtendedAttribute(name: "user.a", value: [1]), ExtendedAttribute(name: "user.a", value: [2])]
        #expect(throws: TarError.self) { try TarEncoder.encode(header) }
        header.extendedAttributeList[1].name = "user.\u{212A}"
        header.extendedAttributeList[0].name = "user.K"
        #expect(throws: Never.self) { try TarEncoder.encode(header) }
    }

    /// Attributes compare as bytes and values, the way the file system tells them apart.
    @Test func attributesCompareAsBytes() {
        let precomposed = ExtendedAttribute(name: "user.caf\u{E9}", value: [1])
        let combining = ExtendedAttribute(name: "user.cafe\u{301}", value: [1])
        #expect(precomposed != combining)
        #expect(Set([precomposed, combining, precomposed]).count == 2)
        #expect(precomposed == ExtendedAttribute(name: "user.caf\u{E9}", value: [1]))
        #expect(precomposed != ExtendedAttribute(name: "user.caf\u{E9}", value: [2]))
    }
}
