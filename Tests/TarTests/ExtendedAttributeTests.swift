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
}
