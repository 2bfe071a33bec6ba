import Foundation
import Tar
import Testing

@testable import IndexedArchive

extension EngineSuites {
    /// A stream's members held to the index that follows them, without keeping the members.
    @Suite struct MemberFingerprintsTests {
        /// Ten members as an index lists them: files (with checksums), a folder, a link.
        static func entries() -> [ArchiveEntry] {
            var entries: [ArchiveEntry] = []
            var offset: UInt64 = 0
            for position in 0..<10 {
                let kind: TarEntryKind = position == 3 ? .directory : position == 5 ? .symbolicLink : .regular
                let size: UInt64 = kind == .regular ? UInt64(100 * position) : 0
                entries.append(
                    ArchiveEntry(
                        path: "d/member-\(position)", kind: kind, size: size, mode: 0o644, uid: 0, gid: 0,
                        mtime: TarTimestamp(seconds: 1_700_000_000 + Int64(position), nanoseconds: 0),
                        linkTarget: kind == .symbolicLink ? "member-0" : nil, headerOffset: offset, dataOffset: offset + 512,
                        checksum: kind == .regular ? UInt64(0xC0FFEE + position) : nil, hasPaxHeader: false))
                offset += 512 + (size + 511) / 512 * 512
            }
            return entries
        }

        static func fingerprints(of entries: [ArchiveEntry], naming named: Int) -> MemberFingerprints {
            var fingerprints = MemberFingerprints(naming: named)
            for entry in entries { fingerprints.add(entry) }
            return fingerprints
        }

        static func refusal(_ fingerprints: MemberFingerprints, _ listed: [ArchiveEntry]) -> ArchiveError? {
            do {
                try fingerprints.check(listed)
                return nil
            } catch {
                return error
            }
        }

        @Test func theSameMembersPass() throws {
            let seen = Self.fingerprints(of: Self.entries(), naming: 4)
            try seen.check(Self.entries())
            // The index has the fraction of a second the tar header lacked.
            var listed = Self.entries()
            listed[1].mtime = TarTimestamp(seconds: listed[1].mtime.seconds, nanoseconds: 250_000_000)
            listed[8].mtime = TarTimestamp(seconds: listed[8].mtime.seconds, nanoseconds: 750_000_000)
            try seen.check(listed)
        }

        /// Each field, changed in one member: among the first members the error names it;
        /// past them it is found all the same.
        @Test(arguments: ["path", "kind", "size", "offset", "mode", "owner", "group", "seconds", "link", "checksum", "path bytes"])
        func anyFieldChangedInAnyMemberIsRefused(field: String) throws {
            for position in [2, 7] {
                let seen = Self.fingerprints(of: Self.entries(), naming: 4)
                var listed = Self.entries()
                let target = field == "link" ? 5 : position == 2 ? 2 : 7
                switch field {
                case "path": listed[target].path += "x"
                case "kind": listed[target].kind = .fifo
                case "size": listed[target].size += 1
                case "offset": listed[target].dataOffset += 512
                case "mode": listed[target].mode = 0o4755
                case "owner": listed[target].uid = 1000
                case "group": listed[target].gid = 1000
                case "seconds": listed[target].mtime = TarTimestamp(seconds: 0)
                case "link": listed[target].linkTarget = "/etc/passwd"
                case "checksum": listed[target].checksum = 1
                // Canonically equivalent, different bytes: "é" precomposed, then decomposed.
                default:
                    let seenWith = Self.entries().enumerated().map { index, entry in
                        var entry = entry
                        if index == target { entry.path = "caf\u{E9}" }
                        return entry
                    }
                    listed = seenWith
                    listed[target].path = "cafe\u{301}"
                    let error = Self.refusal(Self.fingerprints(of: seenWith, naming: position == 2 ? 4 : 0), listed)
                    #expect(error?.code == .corrupt, "\(field) at \(target): \(String(describing: error))")
                    continue
                }
                let error = try #require(Self.refusal(seen, listed), "\(field) at \(target) passed")
                #expect(error.code == (field == "checksum" ? .checksumMismatch : .corrupt), "\(error)")
                if target < 4 {
                    #expect(error.member == listed[target].path, "\(field) at \(target): \(error)")
                } else {
                    #expect(error.member == nil && error.message.contains("after the first 4"), "\(field) at \(target): \(error)")
                }
            }
        }

        /// A tar header's own fraction of a second must be the index's.
        @Test func aFractionTheHeaderHasMustBeTheIndexs() {
            var seenEntries = Self.entries()
            seenEntries[1].mtime = TarTimestamp(seconds: seenEntries[1].mtime.seconds, nanoseconds: 1)
            let seen = Self.fingerprints(of: seenEntries, naming: 4)
            #expect(Self.refusal(seen, seenEntries) == nil)
            let error = Self.refusal(seen, Self.entries())
            #expect(error?.member == "d/member-1", "\(String(describing: error))")
        }

        @Test func anotherCountOrOrderIsRefused() {
            let seen = Self.fingerprints(of: Self.entries(), naming: 0)
            #expect(Self.refusal(seen, Array(Self.entries().dropLast()))?.message.contains("lists 9 members, the stream had 10") == true)
            var swapped = Self.entries()
            swapped.swapAt(6, 8)
            #expect(Self.refusal(seen, swapped)?.code == .corrupt)
        }

        /// What a stream's reading keeps does not grow past the named members.
        @Test func aListingThatKeepsNoEntriesHoldsOnlyTheNamedFingerprints() throws {
            var consumer = TarConsumer(listing: MemberListing(checksums: true, keepsEntries: false))
            let members = (0..<50).map { tarFile("f\($0)", "content \($0)") }
            try TarSinksTests.feed(&consumer, try tarStream(members), piece: 4096)
            #expect(consumer.collected?.isEmpty == true)
            #expect(consumer.listing?.count == 50)
            var keeping = TarConsumer(listing: MemberListing(checksums: true))
            try TarSinksTests.feed(&keeping, try tarStream(members), piece: 4096)
            // The listing that kept the entries and the one that did not agree on the index.
            try consumer.listing?.fingerprints.check(keeping.collected ?? [])
        }
    }
}

extension MemberFingerprints {
    /// Checks `entries` (the index's) against the members added, as a stream's reading does
    /// entry by entry.
    func check(_ entries: [ArchiveEntry]) throws(ArchiveError) {
        var checker = Checker(self)
        for entry in entries { try checker.visit(entry) }
        try checker.finish()
    }
}
