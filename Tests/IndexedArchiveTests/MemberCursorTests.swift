import Tar
import Testing
import XZ

@testable import IndexedArchive

extension EngineSuites {
    /// `MemberCursor` on its own, without an archive: the decoded tar stream is handed to it in
    /// pieces of every size, and the index entry it follows is made to lie in each way it checks.
    @Suite struct MemberCursorTests {
        /// Three members; the cursor follows the middle one, a file whose content spans several
        /// tar blocks, so pieces can start before its header and end after its content.
        static let members = [
            tarFile("a.txt", "first"),
            tarFile("dir/b.bin", String(repeating: "0123456789abcdef", count: 97), mode: 0o640),
            tarFile("c.txt", "last")
        ]

        /// The stream, and the index entry that truly describes its middle member.
        static func streamAndEntry() throws -> (stream: [UInt8], entry: ArchiveEntry) {
            let before = try tarStream([members[0]], end: false)
            let stream = try tarStream(members)
            let (header, content) = members[1]
            let entry = ArchiveEntry(
                path: header.path, kind: header.kind, size: header.size, mode: header.mode, uid: header.uid,
                gid: header.gid, mtime: TarTimestamp(seconds: header.mtime.seconds, nanoseconds: 123_456_789),
                linkTarget: nil, headerOffset: UInt64(before.count), dataOffset: UInt64(before.count + 512),
                checksum: CRC.crc64(content), hasPaxHeader: false)
            return (stream, entry)
        }

        /// Feeds `stream` to a cursor for `entry` in pieces of `size` bytes (the last one shorter)
        /// and returns what it handed back.
        static func follow(_ entry: ArchiveEntry, through stream: [UInt8], pieces size: Int) throws -> (
            header: TarHeader?, content: [UInt8], cursor: MemberCursor
        ) {
            var cursor = MemberCursor(entry, end: entry.dataOffset + entry.size, path: "test.tar.xz")
            var header: TarHeader?
            var content: [UInt8] = []
            for start in stride(from: 0, to: stream.count, by: size) {
                let piece = DecodedPiece(bytes: stream, range: start..<min(start + size, stream.count), offset: UInt64(start))
                let step = try cursor.take(piece)
                if let found = step.header {
                    #expect(header == nil, "the header was handed on twice")
                    header = found
                }
                step.content?.withBytes { content += $0 }
            }
            return (header, content, cursor)
        }

        @Test(arguments: [1, 7, 511, 512, 513, 1000, 4096, 1 << 20])
        func piecesOfAnySizeGiveTheMemberOnce(size: Int) throws {
            let (stream, entry) = try Self.streamAndEntry()
            let (header, content, cursor) = try Self.follow(entry, through: stream, pieces: size)
            #expect(content == Self.members[1].1)
            #expect(header?.path == "dir/b.bin")
            #expect(header?.mode == 0o640)
            // The index has the nanoseconds the ustar header cannot hold.
            #expect(header?.mtime == entry.mtime)
            try cursor.finish()
        }

        @Test func contentThatDoesNotMatchTheChecksumIsRefusedAtTheEnd() throws {
            var (stream, entry) = try Self.streamAndEntry()
            stream[Int(entry.dataOffset) + 100] ^= 0x20
            let (header, content, cursor) = try Self.follow(entry, through: stream, pieces: 256)
            // Everything came through, but `finish` tells the caller to throw it away.
            #expect(header != nil && content.count == Self.members[1].1.count)
            let error = #expect(throws: ArchiveError.self) { try cursor.finish() }
            #expect(error?.code == .checksumMismatch)
            #expect(error?.member == "dir/b.bin" && error?.offset == entry.dataOffset)
        }

        @Test func aHeaderThatWasNeverDecodedIsRefused() throws {
            let (stream, entry) = try Self.streamAndEntry()
            var cursor = MemberCursor(entry, end: entry.dataOffset + entry.size, path: "test.tar.xz")
            // Only what precedes the member.
            _ = try cursor.take(DecodedPiece(bytes: stream, range: 0..<Int(entry.headerOffset), offset: 0))
            let error = #expect(throws: ArchiveError.self) { try cursor.finish() }
            #expect(error?.code == .corrupt)
            #expect(error?.message.contains("header blocks were not decoded") == true, "\(String(describing: error))")
        }

        /// An index that disagrees with the tar header in any field the cursor checks is refused
        /// before a byte of content is handed on, naming what disagrees.
        @Test(arguments: [
            ("path", "the header names \"dir/b.bin\""),
            ("kind", "the header is a regular, the index a symbolicLink"),
            ("size", "the header gives 1552 bytes, the index 1551"),
            ("mode", "the header gives mode 640, the index 4755"),
            ("owner", "the index 4242:"),
            ("link", "the header links to \"\", the index to \"/etc/passwd\""),
            ("time", "the index 12345.000000007"),
            ("data offset", "its data starts at")
        ])
        func anIndexThatDisagreesWithTheHeaderIsRefused(field: String, says: String) throws {
            let (stream, original) = try Self.streamAndEntry()
            var entry = original
            switch field {
            case "path": entry.path = "dir/other.bin"
            case "kind": entry.kind = .symbolicLink
            case "size": entry.size -= 1
            case "mode": entry.mode = 0o4755
            case "owner": entry.uid = 4242
            case "link": entry.linkTarget = "/etc/passwd"
            // A selection once took the index's time without holding its seconds to the header's.
            case "time": entry.mtime = TarTimestamp(seconds: 12345, nanoseconds: 7)
            default: entry.dataOffset += 512
            }
            var delivered = 0
            let error = #expect(throws: ArchiveError.self) {
                var cursor = MemberCursor(entry, end: entry.dataOffset + entry.size, path: "test.tar.xz")
                for start in stride(from: 0, to: stream.count, by: 300) {
                    let piece = DecodedPiece(bytes: stream, range: start..<min(start + 300, stream.count), offset: UInt64(start))
                    delivered += try cursor.take(piece).content?.count ?? 0
                }
            }
            #expect(delivered == 0, "\(field): content was handed on before the header was checked")
            #expect(error?.code == .corrupt, "\(field)")
            #expect(error?.member == entry.path && error?.offset == entry.headerOffset, "\(field)")
            #expect(error?.message.contains("disagrees with the index") == true, "\(field): \(String(describing: error))")
            #expect(error?.message.contains(says) == true, "\(field): \(String(describing: error))")
        }

        /// An index that points into another member's content finds no tar header there.
        @Test func anOffsetInsideContentFindsNoHeader() throws {
            var (stream, entry) = try Self.streamAndEntry()
            let contentStart = Int(entry.dataOffset)
            // Content that is not a header: the 512 bytes at the offset fail the header checksum.
            stream.replaceSubrange(contentStart..<contentStart + 16, with: Array("not a tar header".utf8))
            entry.headerOffset = entry.dataOffset
            entry.dataOffset += 512
            entry.size = 100
            let error = #expect(throws: ArchiveError.self) { _ = try Self.follow(entry, through: stream, pieces: 64) }
            #expect(error?.code == .corrupt)
            #expect(error?.message.contains("no valid tar header at the indexed offset") == true, "\(String(describing: error))")
            #expect(error?.member == "dir/b.bin")
        }
    }
}
