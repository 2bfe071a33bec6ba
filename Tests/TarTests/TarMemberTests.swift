import Tar
import Testing

/// `TarMember` is a value; what matters is that the parser fills its offsets correctly for
/// each way a member's header blocks can be laid out.
struct TarMemberTests {
    @Test func memberwiseInitAndEquality() {
        let header = TarHeader(path: "a", kind: .regular, size: 1)
        let member = TarMember(header: header, headerOffset: 512, dataOffset: 1024, hasPaxHeader: false)
        #expect(member.header == header && member.headerOffset == 512 && member.dataOffset == 1024 && !member.hasPaxHeader)
        #expect(member != TarMember(header: header, headerOffset: 512, dataOffset: 1024, hasPaxHeader: true))
    }

    @Test func offsetsForPlainPaxAndGlobalLayouts() throws {
        let bytes = try archive(
            [
                (TarHeader(path: "plain.txt", kind: .regular, size: 700), [UInt8](repeating: 1, count: 700)),
                (TarHeader(path: String(repeating: "long/", count: 30) + "f", kind: .regular, size: 1), [2]),
                (TarHeader(path: "dir", kind: .directory), [])
            ], global: [(key: "AMK.version", value: "1")])
        let found = members(try parse(bytes))
        #expect(found.count == 3)
        // global header: 1024 bytes; plain: header 512 + content 1024 (700 padded).
        #expect(found[0].headerOffset == 1024 && found[0].dataOffset == 1536 && !found[0].hasPaxHeader)
        #expect(found[1].headerOffset == 2560 && found[1].dataOffset == 2560 + 1024 + 512 && found[1].hasPaxHeader)
        #expect(found[2].headerOffset == 2560 + 1536 + 512 && found[2].dataOffset == found[2].headerOffset + 512)
    }

    /// GNU long names: the member starts at its first `L` block, and is not a pax member.
    @Test func offsetsForGnuLongNameAndLink() throws {
        let name = String(repeating: "n", count: 120)
        let target = String(repeating: "t", count: 130)
        let nameData = Array(name.utf8) + [0]
        let linkData = Array(target.utf8) + [0]
        let bytes =
            RawBlock(name: "./first", size: 0, magic: .gnu).bytes
            + RawBlock(name: "././@LongLink", typeflag: UInt8(ascii: "L"), size: UInt64(nameData.count), magic: .gnu).bytes
            + padded(nameData)
            + RawBlock(name: "././@LongLink", typeflag: UInt8(ascii: "K"), size: UInt64(linkData.count), magic: .gnu).bytes
            + padded(linkData)
            + RawBlock(name: String(repeating: "n", count: 100), typeflag: UInt8(ascii: "2"), magic: .gnu).bytes
            + TarEncoder.endOfArchive
        let found = members(try parse(bytes))
        #expect(found.count == 2)
        #expect(found[1].headerOffset == 512)
        #expect(found[1].dataOffset == 512 * 6)
        #expect(!found[1].hasPaxHeader)
        #expect(found[1].header.path == name)
        #expect(found[1].header.linkTarget == target)
        #expect(found[1].header.kind == .symbolicLink)
    }
}
