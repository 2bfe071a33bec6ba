import Foundation
import Tar
import Testing
import XZ

@testable import IndexedArchive

extension EngineSuites {
    /// The parts a `TarConsumer` is made of, each driven through a consumer fed a tar stream in
    /// small, uneven pieces (so that headers and contents arrive cut).
    @Suite struct TarSinksTests {
        static let members = [tarFile("a.txt", "hello"), tarDirectory("d/"), tarFile("d/b.txt", "x")]

        /// Feeds `bytes` to `consumer` in pieces of `piece` bytes, then finishes it.
        static func feed(_ consumer: inout TarConsumer, _ bytes: [UInt8], piece: Int = 7, finish: Bool = true) throws {
            var start = 0
            while start < bytes.count {
                let end = min(bytes.count, start + piece)
                try bytes[start..<end].withUnsafeBytes { try consumer.consume($0) }
                start = end
            }
            if finish { try consumer.finish() }
        }

        /// The members of `members`' stream as a listing with checksums finds them: the index a
        /// packer would have written for it.
        static func listed() throws -> [ArchiveEntry] {
            var consumer = TarConsumer(listing: MemberListing(checksums: true))
            try feed(&consumer, try tarStream(members))
            return consumer.collected ?? []
        }

        static func error(_ body: () throws -> Void) -> ArchiveError? {
            do {
                try body()
            } catch let error as ArchiveError {
                return error
            } catch {
                Issue.record("expected an ArchiveError, got \(error)")
            }
            return nil
        }

        @Test func aListingWithChecksumsHasEachRegularMembersCRC() throws {
            let entries = try Self.listed()
            #expect(entries.map(\.path) == ["a.txt", "d/", "d/b.txt"])
            #expect(entries[0].checksum == CRC.crc64(Array("hello".utf8)))
            #expect(entries[1].checksum == nil, "a folder has no content checksum")
            #expect(entries[2].checksum == CRC.crc64(Array("x".utf8)))
            #expect(entries[2].headerOffset == 1024 + 512, "a.txt's header and one content block, then d/'s header")

            var plain = TarConsumer(listing: MemberListing())
            try Self.feed(&plain, try tarStream(Self.members))
            #expect(plain.collected?.allSatisfy { $0.checksum == nil } == true, "checksums only when asked for")
        }

        @Test func conformanceAcceptsTheStreamItsIndexDescribes() throws {
            var consumer = TarConsumer(expected: try Self.listed())
            try Self.feed(&consumer, try tarStream(Self.members))
            #expect(consumer.members == 3)
        }

        /// Every field an entry must agree with is checked, and the refusal says which.
        @Test(arguments: [
            ("size", "the header gives 1 bytes, the index 2"),
            ("mode", "the header gives mode 644, the index 4755"),
            // `list` shows the index's owner, an extraction as root gives the header's.
            ("owner", "the header gives the owner 0:0, the index 1000:0"),
            ("group", "the header gives the owner 0:0, the index 0:1000"),
            ("time", "the index 99.000000000"),
            ("path", "the header names \"d/b.txt\", the index \"d/c.txt\""),
            ("header offset", "the member starts at offset 1536, the index says 2048")
        ])
        func conformanceRefusesAHeaderThatDisagreesWithItsEntry(field: String, says: String) throws {
            var expected = try Self.listed()
            switch field {
            case "size": expected[2].size += 1
            case "mode": expected[2].mode = 0o4755
            case "owner": expected[2].uid = 1000
            case "group": expected[2].gid = 1000
            case "time": expected[2].mtime = TarTimestamp(seconds: 99)
            case "path": expected[2].path = "d/c.txt"
            default: expected[2].headerOffset += 512
            }
            var consumer = TarConsumer(expected: expected)
            let error = Self.error { try Self.feed(&consumer, try tarStream(Self.members)) }
            #expect(error?.code == .corrupt)
            #expect(error?.member == "d/b.txt")
            #expect(error?.message.contains("disagrees with the index entry") == true, "\(String(describing: error))")
            #expect(error?.message.contains(says) == true, "\(field): \(String(describing: error))")
        }

        @Test func conformanceRefusesContentThatDoesNotMatchItsChecksum() throws {
            var expected = try Self.listed()
            expected[0].checksum = CRC.crc64(Array("jello".utf8))
            var consumer = TarConsumer(expected: expected)
            let error = Self.error { try Self.feed(&consumer, try tarStream(Self.members)) }
            #expect(error?.code == .checksumMismatch)
            #expect(error?.member == "a.txt")
        }

        @Test func conformanceCountsTheMembers() throws {
            let expected = try Self.listed()
            var short = TarConsumer(expected: expected)
            let missing = Self.error { try Self.feed(&short, try tarStream(Array(Self.members.prefix(2)))) }
            #expect(missing?.code == .corrupt)
            #expect(missing?.message.contains("lists 3 members but the tar stream has 2") == true, "\(String(describing: missing))")

            var long = TarConsumer(expected: Array(expected.prefix(2)))
            let extra = Self.error { try Self.feed(&long, try tarStream(Self.members)) }
            #expect(extra?.code == .corrupt)
            #expect(extra?.member == "d/b.txt")
            #expect(extra?.message.contains("not in the index") == true, "\(String(describing: extra))")
        }

        @Test func captureKeepsTheNamedMemberAndHoldsItsLimit() throws {
            var consumer = TarConsumer(capture: MemberCapture("d/b.txt", limit: 100))
            try Self.feed(&consumer, try tarStream(Self.members + [tarFile("d/b.txt", "a later one")]))
            #expect(consumer.capture?.isDone == true)
            #expect(consumer.capture?.bytes == Array("x".utf8), "the first member of the name")

            var folder = TarConsumer(capture: MemberCapture("d", limit: 100))
            try Self.feed(&folder, try tarStream(Self.members))
            #expect(folder.capture?.isDone == true, "a folder is found without its slash")

            var limited = TarConsumer(capture: MemberCapture("a.txt", limit: 4))
            let error = Self.error { try Self.feed(&limited, try tarStream(Self.members)) }
            #expect(error?.code == .limitExceeded)
            #expect(error?.member == "a.txt")
        }

        @Test func trailingBytesAreKeptFromTheEndMarkerUpToTheLimit() throws {
            let stream = try tarStream(Self.members)
            let after = Array("AMKINDEX and the rest".utf8)
            for piece in [1, 5, 512, 4096] {
                var consumer = TarConsumer()
                consumer.trailing = TrailingBytes(limit: after.count)
                try Self.feed(&consumer, stream + after, piece: piece, finish: false)
                #expect(consumer.trailing?.bytes == after, "pieces of \(piece)")
            }
            var over = TarConsumer()
            over.trailing = TrailingBytes(limit: after.count - 1)
            let error = Self.error { try Self.feed(&over, stream + after, finish: false) }
            #expect(error?.code == .limitExceeded)
            #expect(error?.offset == UInt64(stream.count), "named where the tar stream ends")
        }

        /// Whatever lies between the end marker and the index (zero blocks, or bytes tar ignores
        /// there) is passed over, and the index found after it, its magic split across pieces
        /// too: a pipe once took the first bytes that were not the magic for the end of
        /// everything, and never checked the index behind them.
        @Test func theIndexIsFoundBehindWhateverFollowsTheEndMarker() throws {
            let stream = try tarStream(Self.members)
            let index = Array("AMKINDEX and the rest".utf8)
            let junk = [UInt8](repeating: 0, count: 1024) + Array("AMKINDE? not quite, A, AM".utf8) + [UInt8](repeating: 7, count: 600)
            for piece in [1, 3, 7, 512, 4096] {
                var consumer = TarConsumer()
                consumer.trailing = TrailingBytes(limit: index.count)
                try Self.feed(&consumer, stream + junk + index, piece: piece, finish: false)
                #expect(consumer.trailing?.bytes == index, "pieces of \(piece)")
                #expect(consumer.trailing?.indexStart == UInt64(stream.count + junk.count), "pieces of \(piece)")
            }
            var none = TarConsumer()
            none.trailing = TrailingBytes(limit: 16)
            try Self.feed(&none, stream + junk, finish: false)
            #expect(none.trailing?.bytes.isEmpty == true && none.trailing?.indexStart == nil, "no index: nothing kept, nothing counted")
        }

        /// Once the index's header says how long it is, what follows it (pixz's index, about as
        /// large again) is not kept, but still counts against the limit.
        @Test func onlyTheIndexIsKeptOfWhatFollowsTheTarStream() throws {
            let stream = try tarStream(Self.members)
            let index = ArchiveIndex(entries: try Self.listed(), tarSize: UInt64(stream.count), chunkSize: 1 << 20, metadata: [:])
                .encoded()
            let after = index + [UInt8](repeating: 0xA6, count: 5000)
            for piece in [1, 97, 512, 4096] {
                var consumer = TarConsumer()
                consumer.trailing = TrailingBytes(limit: after.count)
                try Self.feed(&consumer, stream + after, piece: piece, finish: false)
                #expect(consumer.trailing?.bytes == index, "pieces of \(piece)")
                #expect(try ArchiveIndex.decode(consumer.trailing?.bytes ?? []).entries.count == Self.members.count)
            }
            var over = TarConsumer()
            over.trailing = TrailingBytes(limit: after.count - 1)
            #expect(Self.error { try Self.feed(&over, stream + after, finish: false) }?.code == .limitExceeded)
        }

        @Test func aListingForgetsTheMemberADamagedBlockCut() throws {
            var listing = MemberListing()
            var consumer = TarConsumer(listing: listing)
            try Self.feed(&consumer, try tarStream(Self.members), finish: false)
            listing = consumer.listing!
            listing.dropLast(ifNamed: "a.txt")
            #expect(listing.entries.count == 3, "only the last member, when it has the name")
            listing.dropLast(ifNamed: "d/b.txt")
            #expect(listing.entries.map(\.path) == ["a.txt", "d/"])
        }
    }
}
