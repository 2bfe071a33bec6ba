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

    @Test(arguments: ["", "user.\u{0}x"])
    func badNamesAreRefused(name: String) throws {
        var header = TarHeader(path: "f", kind: .regular)
        header.extendedAttributes = [name: [1]]
        #expect(throws: TarError.self) { try TarEncoder.encode(header) }
    }

    @Test func recordsWrittenByHandAreRead() throws {
        let decoded = try member(withRecords: paxRecord(Array("SCHILY.xattr.user.comment".utf8), [0x68, 0x69, 0xFF]))
        #expect(decoded?.extendedAttributes == ["user.comment": [0x68, 0x69, 0xFF]])
    }

    /// ACLs as GNU tar (`--acls`, a line each) and bsdtar (commas) store them: written and read
    /// as the text they are, beside the attributes; a NUL in one is refused.
    @Test func accessControlListsAreCarriedAsText() throws {
        var header = TarHeader(path: "d/", kind: .directory, mode: 0o755)
        header.accessACL = "user::rwx\nuser:alice:r-x\ngroup::r-x\nmask::r-x\nother::r-x\n"
        header.defaultACL = "user::rwx,group::r-x,other::---,user:bob:rwx:1002,mask::rwx"
        let keys = paxRecords(try TarEncoder.encode(header))?.map(\.key)
        #expect(keys == ["SCHILY.acl.access", "SCHILY.acl.default"])
        #expect(try roundTrip(header) == header)
        let bsdtars = try member(withRecords: paxRecord(Array("SCHILY.acl.access".utf8), Array("user::rw-,group::r--,other::r--".utf8)))
        #expect(bsdtars?.accessACL == "user::rw-,group::r--,other::r--")
        #expect(bsdtars?.defaultACL == nil)
        header.accessACL = "user::rw-\u{0},group::r--,other::r--"
        #expect(throws: TarError.self) { try TarEncoder.encode(header) }
    }

    /// An ACL belongs to one file: a global header's is not given to every member.
    @Test func aGlobalHeadersACLIsNoMembers() throws {
        let decoded = try member(
            withRecords: paxRecord(Array("SCHILY.acl.access".utf8), Array("user::rwx,group::rwx,other::rwx".utf8)), typeflag: "g")
        #expect(try #require(decoded).accessACL == nil)
    }

    /// Parses a stream of one member after an `x` header (or a global `g` one) holding `records`.
    private func member(withRecords records: [UInt8], typeflag: Character = "x") throws -> TarHeader? {
        var stream = extendedHeader(typeflag, records)
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

    /// GNU tar writes `%` and `=` in a name as `%25` and `%3D` (a keyword ends at its first `=`)
    /// and reads them back; a newline is written as it is. Such names round-trip, in GNU tar's
    /// spelling.
    @Test func equalsAndPercentAreEscapedAsGNUTarEscapesThem() throws {
        var header = TarHeader(path: "f", kind: .regular)
        header.extendedAttributeList = [
            ExtendedAttribute(name: "user.with=equals", value: [1]), ExtendedAttribute(name: "user.pct%41", value: [2]),
            ExtendedAttribute(name: "user.nl\nx", value: [3])
        ]
        let encoded = try TarEncoder.encode(header)
        for key in ["SCHILY.xattr.user.with%3Dequals=", "SCHILY.xattr.user.pct%2541=", "SCHILY.xattr.user.nl\nx="] {
            let bytes = Array(key.utf8)
            #expect((0...(encoded.count - bytes.count)).contains { encoded[$0..<($0 + bytes.count)].elementsEqual(bytes) }, "\(key)")
        }
        let decoded = try #require(try roundTrip(header))
        #expect(decoded == header)
    }

    /// bsdtar writes every byte outside printable ASCII as `%XX` too (`user.caf%C3%A9`); each escape
    /// is read as its byte. A `%` without two hex digits after it is itself.
    @Test func everyPercentEscapeIsReadAsItsByte() throws {
        let records =
            paxRecord("SCHILY.xattr.user.caf%C3%A9", "1") + paxRecord("SCHILY.xattr.user.nl%0ax", "2")
            + paxRecord("SCHILY.xattr.user.odd%zz%4", "3")
        let decoded = try #require(try member(withRecords: records))
        #expect(
            decoded.extendedAttributeList.map { Array($0.name.utf8) } == [
                Array("user.caf\u{E9}".utf8), Array("user.nl\nx".utf8), Array("user.odd%zz%4".utf8)
            ])
    }

    /// `%00` is no escape: decoded, its NUL would cut the name where the kernel reads it, and
    /// `user.a%00evil` would set `user.a`, replacing that attribute's value without a word. It
    /// stays three bytes, as GNU tar and bsdtar keep it, and both attributes survive.
    @Test func percentZeroZeroIsNotANUL() throws {
        let records = paxRecord("SCHILY.xattr.user.a", "first") + paxRecord("SCHILY.xattr.user.a%00evil", "second")
        let decoded = try #require(try member(withRecords: records))
        #expect(decoded.extendedAttributeList.map(\.name) == ["user.a", "user.a%00evil"])
        #expect(decoded.extendedAttributeList.map(\.value) == [Array("first".utf8), Array("second".utf8)])
    }
}
