import Tar
import Testing

struct TarHeaderTests {
    private func decode(_ block: [UInt8], offset: UInt64 = 0) throws -> TarHeader {
        try block.withUnsafeBytes { try TarHeader.decode(ustarBlock: $0, offset: offset) }
    }

    @Test func initDefaults() {
        let header = TarHeader(path: "a", kind: .regular)
        #expect(header.size == 0)
        #expect(header.mode == 0o644)
        #expect(header.uid == 0 && header.gid == 0)
        #expect(header.mtime == TarTimestamp(seconds: 0))
        #expect(header.linkTarget == nil && header.userName == nil && header.groupName == nil)
        #expect(header.deviceMajor == 0 && header.deviceMinor == 0)
    }

    @Test func decodesAnEncodedUstarBlock() throws {
        let header = TarHeader(
            path: "dir/file.txt", kind: .regular, size: 12_345, mode: 0o4755, uid: 1000, gid: 2000,
            mtime: .init(seconds: 1_700_000_000), userName: "alice", groupName: "staff"
        )
        let encoded = try TarEncoder.encode(header)
        #expect(encoded.count == 512)
        #expect(try decode(encoded, offset: 99) == header)
    }

    /// A block written by hand, the way a foreign ustar writer splits a long path: the prefix
    /// field is joined with "/".
    @Test func joinsPrefixAndName() throws {
        var block = RawBlock(name: "name.txt")
        block.set(345, "some/prefix")
        block.sealChecksum()
        #expect(try decode(block.bytes).path == "some/prefix/name.txt")
    }

    /// GNU headers have no prefix field; bytes 345... hold atime and must not be read as one.
    @Test func gnuMagicIgnoresPrefixArea() throws {
        var block = RawBlock(name: "gnu.txt", magic: .gnu)
        block.set(345, "14532413241")
        block.set(265, "bob")
        block.sealChecksum()
        let header = try decode(block.bytes)
        #expect(header.path == "gnu.txt")
        #expect(header.userName == "bob")
    }

    /// A pre-POSIX header: no magic, typeflag NUL, and a trailing slash meaning directory;
    /// bytes beyond linkname are not fields.
    @Test func v7HeaderWithSlashIsADirectory() throws {
        var block = RawBlock(name: "olddir/", typeflag: 0, magic: .v7)
        block.set(265, "junk-not-a-name")
        block.set(329, "zz")
        block.sealChecksum()
        let header = try decode(block.bytes)
        #expect(header.kind == .directory)
        #expect(header.path == "olddir/")
        #expect(header.userName == nil)
        #expect(header.mode == 0o644 && header.uid == 0o1750)
    }

    @Test func directoryPathGetsSlashAndNoSize() throws {
        var block = RawBlock(name: "d", typeflag: UInt8(ascii: "5"), size: 99)
        block.sealChecksum()
        let header = try decode(block.bytes)
        #expect(header.path == "d/")
        #expect(header.size == 0)
    }

    @Test func badChecksumNamesOffset() throws {
        var block = RawBlock(name: "x")
        block.bytes[0] = UInt8(ascii: "y")
        let error = try #require(tarError { _ = try decode(block.bytes, offset: 4096) })
        #expect(error.code == .badChecksum)
        #expect(error.offset == 4096)
    }

    @Test func zeroBlockAndShortBufferAreErrors() throws {
        #expect(
            tarError { _ = try decode([UInt8](repeating: 0, count: 512), offset: 7) }
                == TarError(
                    code: .badField, message: "all-zero block (end-of-archive marker), not a header", offset: 7))
        let short = RawBlock(name: "x").bytes.prefix(511)
        #expect(tarError { _ = try decode(Array(short)) }?.code == .truncated)
    }

    /// An index cross-check reads the ustar block of a pax member on its own: it sees the
    /// placeholder, not the pax path.
    @Test func ustarBlockOfPaxMemberHasPlaceholder() throws {
        let long = String(repeating: "n", count: 150)
        let encoded = try TarEncoder.encode(TarHeader(path: long, kind: .regular, size: 3))
        let header = try decode(Array(encoded.suffix(512)), offset: 512)
        #expect(header.path == String(repeating: "n", count: 100))
        #expect(header.size == 3)
    }

    // MARK: Names that are not UTF-8

    /// Different bytes give different names, and a valid name holding U+FFFD is a third one.
    @Test func invalidUTF8InTheNameFieldKeepsItsBytes() throws {
        var results: [TarHeader] = []
        let names: [[UInt8]] = [[0x61, 0xFF], [0x61, 0xC3], Array("a\u{FFFD}".utf8)]
        for name in names {
            var block = RawBlock(name: "")
            block.setBytes(0, name)
            block.sealChecksum()
            results.append(try decode(block.bytes))
        }
        #expect(results.map(\.path) == ["a\u{10FFFF}", "a\u{10FFC3}", "a\u{FFFD}"])
        #expect(results.map { RawName.encode($0.path) } == names)
    }

    /// The prefix field is part of the path, bytes and all.
    @Test func invalidUTF8InThePrefixKeepsItsBytes() throws {
        var block = RawBlock(name: "name.txt")
        block.setBytes(345, [0x64, 0xE2, 0x82])
        block.sealChecksum()
        let header = try decode(block.bytes)
        #expect(header.path == "d\u{10FFE2}\u{10FF82}/name.txt")
    }

    /// The linkname field counts for links only: on a regular file it is not a name at all.
    @Test(arguments: [(UInt8(ascii: "2"), true), (UInt8(ascii: "1"), true), (UInt8(ascii: "0"), false)])
    func invalidUTF8InTheLinkNameKeepsItsBytesForLinks(typeflag: UInt8, isLink: Bool) throws {
        var block = RawBlock(name: "link", typeflag: typeflag)
        block.setBytes(157, [0x74, 0xFF])
        block.sealChecksum()
        let header = try decode(block.bytes)
        #expect(header.linkTarget == (isLink ? "t\u{10FFFF}" : nil))
    }

    /// User and group names keep their bytes as well.
    @Test func invalidUTF8InOwnerNamesKeepsItsBytes() throws {
        var block = RawBlock(name: "f")
        block.setBytes(265, [0x75, 0xFF])
        block.setBytes(297, [0x67, 0xFF])
        block.sealChecksum()
        let header = try decode(block.bytes)
        #expect(header.userName == "u\u{10FFFF}" && header.groupName == "g\u{10FFFF}")
    }
}
