import Tar
import Testing

@testable import IndexedArchive

extension EngineSuites {
    /// Version 2 of the rich index: payloads written by hand from the layout in ArchiveIndex's
    /// documentation, the encoder held to them, and the damage a reader must refuse.
    @Suite struct ArchiveIndexVersion2Tests {
        /// Unsigned LEB128, written here from the documentation rather than taken from the encoder.
        static func leb(_ value: UInt64) -> [UInt8] {
            var out: [UInt8] = []
            var rest = value
            repeat {
                let low = UInt8(rest & 0x7F)
                rest >>= 7
                out.append(rest == 0 ? low : low | 0x80)
            } while rest != 0
            return out
        }

        static func le(_ value: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) } }

        /// A payload with the documented header over the given sections.
        static func payload(
            count: UInt64, tarSize: UInt64, names: [UInt8], places: [UInt8], attributes: [UInt8],
            checksums: [UInt8] = [], metadata: [UInt8] = [], headerSize: Int = 96, checksumKind: UInt8 = 1
        ) -> [UInt8] {
            var header = Array("AMKINDEX".utf8) + [2, 0, 0, 0]
            header += (0..<4).map { UInt8(truncatingIfNeeded: UInt32(headerSize) >> (8 * UInt32($0))) }
            header += le(count) + le(tarSize) + le(1 << 20)
            header += le(UInt64(names.count)) + le(UInt64(places.count)) + le(UInt64(attributes.count))
            header += le(UInt64(checksums.count)) + le(UInt64(metadata.count))
            header += [checksumKind] + [UInt8](repeating: 0, count: headerSize - 81)
            return header + names + places + attributes + checksums + metadata
        }

        /// `d/` (directory), `d/a.txt` (5 bytes, pax header) and `d/l` -> `a.txt`, by hand.
        static let handWritten: [UInt8] = {
            let names = leb(0) + leb(2) + Array("d/".utf8) + leb(2) + leb(5) + Array("a.txt".utf8) + leb(2) + leb(1) + Array("l".utf8)
            // Headers at 0, 512 (a pax header: the data at 2048) and 2560.
            let places =
                [UInt8(ascii: "5"), 0] + leb(0) + leb(0) + leb(0)
                + [UInt8(ascii: "0"), 1] + leb(512) + leb(1024) + leb(5)
                + [UInt8(ascii: "2"), 0] + leb(2048) + leb(0) + leb(0)
            // mtimes 1,700,000,000.5, then 1 s earlier (zigzag 1), then 2 s later (zigzag 4).
            let attributes =
                leb(3_400_000_000) + leb(500_000_000) + leb(0o755) + leb(501) + leb(20) + leb(0)
                + leb(1) + leb(0) + leb(0o644) + leb(1 << 40) + leb(20) + leb(0)
                + leb(4) + leb(7) + leb(0o777) + leb(501) + leb(20) + leb(5) + Array("a.txt".utf8)
            let metadata: [UInt8] = [1, 0, 0, 0, UInt8(ascii: "k"), 1, 0, 0, 0, UInt8(ascii: "v")]
            return payload(
                count: 3, tarSize: 4096, names: names, places: places, attributes: attributes,
                checksums: le(0xDEAD_BEEF), metadata: metadata)
        }()

        static let handWrittenEntries = [
            ArchiveEntry(
                path: "d/", kind: .directory, size: 0, mode: 0o755, uid: 501, gid: 20,
                mtime: TarTimestamp(seconds: 1_700_000_000, nanoseconds: 500_000_000), linkTarget: nil,
                headerOffset: 0, dataOffset: 512, checksum: nil, hasPaxHeader: false),
            ArchiveEntry(
                path: "d/a.txt", kind: .regular, size: 5, mode: 0o644, uid: 1 << 40, gid: 20,
                mtime: TarTimestamp(seconds: 1_699_999_999), linkTarget: nil,
                headerOffset: 512, dataOffset: 2048, checksum: 0xDEAD_BEEF, hasPaxHeader: true),
            ArchiveEntry(
                path: "d/l", kind: .symbolicLink, size: 0, mode: 0o777, uid: 501, gid: 20,
                mtime: TarTimestamp(seconds: 1_700_000_001, nanoseconds: 7), linkTarget: "a.txt",
                headerOffset: 2560, dataOffset: 3072, checksum: nil, hasPaxHeader: false)
        ]

        @Test func aHandWrittenPayloadDecodesToTheDocumentedFields() throws {
            let index = try ArchiveIndex.decode(Self.handWritten)
            #expect(index.entries == Self.handWrittenEntries)
            #expect(index.tarSize == 4096)
            #expect(index.chunkSize == 1 << 20)
            #expect(index.metadata == ["k": "v"])
        }

        @Test func theEncoderWritesTheDocumentedLayout() {
            let index = ArchiveIndex(entries: Self.handWrittenEntries, tarSize: 4096, chunkSize: 1 << 20, metadata: ["k": "v"])
            #expect(index.encoded() == Self.handWritten)
        }

        @Test func roundTripKeepsEveryFieldOfTheSample() throws {
            var sample = ArchiveIndexTests.sample
            sample.entries[0].uid = 1 << 40
            sample.entries[2].gid = .max
            sample.entries[1].mtime = TarTimestamp(seconds: .min, nanoseconds: 1)
            sample.entries[3].mtime = TarTimestamp(seconds: .max, nanoseconds: 0)
            let decoded = try ArchiveIndex.decode(sample.encoded())
            #expect(decoded.entries == sample.entries, "ids above 32 bits and extreme times are kept, not clamped")
            #expect(decoded.metadata == sample.metadata)
        }

        @Test func thePathsAloneNeedOnlyTheHeaderAndTheNames() throws {
            var bytes = Self.handWritten
            let header = try ArchiveIndex.header(bytes, maxEntries: 10, archiveSize: nil, blockOffset: nil)
            let namesEnd = 96 + (1 + 1 + 2) + (1 + 1 + 5) + (1 + 1 + 1)
            #expect(header.pathsByteCount == UInt64(namesEnd))
            // Everything after the names is garbage: a full decode refuses it, the paths don't read it.
            for i in namesEnd..<bytes.count { bytes[i] = 0xFF }
            #expect(throws: ArchiveError.self) { try ArchiveIndex.decode(bytes) }
            let paths = try ArchiveIndex.decodePaths(Array(bytes[0..<namesEnd]), header: header, blockOffset: nil, maxNameBytes: 1 << 20)
            #expect(paths.strings == ["d/", "d/a.txt", "d/l"])
            // One byte short of the names is refused.
            #expect(throws: ArchiveError.self) {
                try ArchiveIndex.decodePaths(Array(bytes[0..<namesEnd - 1]), header: header, blockOffset: nil, maxNameBytes: 1 << 20)
            }
        }

        @Test func versionOnePayloadsStillDecodePathsAlone() throws {
            let sample = ArchiveIndexTests.sample
            let bytes = sample.encodedVersion1()
            let header = try ArchiveIndex.header(bytes, maxEntries: 10, archiveSize: nil, blockOffset: nil)
            #expect(header.pathsByteCount == UInt64(bytes.count), "version 1 keeps its names after the records")
            #expect(
                try ArchiveIndex.decodePaths(bytes, header: header, blockOffset: nil, maxNameBytes: 1 << 20).strings
                    == sample.entries.map(\.path))
        }

        @Test func aSortedTreeTakesAQuarterOfVersionOnesBytes() throws {
            // 2,000 members under shared directories, as a sorted walk lists them.
            var entries: [ArchiveEntry] = []
            var offset: UInt64 = 0
            for package in 0..<100 {
                for file in 0..<20 {
                    let size = UInt64(100 + file * 37)
                    entries.append(
                        ArchiveEntry(
                            path: "usr/share/doc/package-\(package)/file-\(file).txt", kind: .regular, size: size, mode: 0o644,
                            uid: 0, gid: 0, mtime: TarTimestamp(seconds: 1_700_000_000 + Int64(file)), linkTarget: nil,
                            headerOffset: offset, dataOffset: offset + 512, checksum: UInt64(file), hasPaxHeader: false))
                    offset += 512 + (size + 511) / 512 * 512
                }
            }
            let index = ArchiveIndex(entries: entries, tarSize: offset + 1024, chunkSize: 1 << 23, metadata: [:])
            let two = index.encoded()
            let one = index.encodedVersion1()
            #expect(two.count * 4 < one.count, "version 2: \(two.count) bytes, version 1: \(one.count)")
            #expect(try ArchiveIndex.decode(two).entries == entries)
        }

        @Test func aLaterMinorWithALongerHeaderAndMoreSectionsStillDecodes() throws {
            // A later minor lengthens the header to 128 bytes and appends a section after the
            // metadata: readers skip both.
            let original = Self.handWritten
            var bytes = Array(original[0..<96])
            bytes[10] = 1
            bytes[12] = 128
            bytes += [UInt8](repeating: 0xAB, count: 32)
            bytes += original[96...]
            bytes += [UInt8](repeating: 0xCD, count: 40)
            let index = try ArchiveIndex.decode(bytes)
            #expect(index.entries == Self.handWrittenEntries)
            #expect(index.metadata == ["k": "v"])
        }

        typealias Tamper = ArchiveIndexTests.Tamper

        /// A payload of one regular file `f` with the given parts; the defaults are valid.
        static func one(
            names: [UInt8] = leb(0) + leb(1) + [UInt8(ascii: "f")],
            places: [UInt8] = [UInt8(ascii: "0"), 0] + leb(0) + leb(0) + leb(3),
            attributes: [UInt8] = leb(0) + leb(0) + leb(0o644) + leb(0) + leb(0) + leb(0),
            checksums: [UInt8] = le(1), count: UInt64 = 1, tarSize: UInt64 = 2048
        ) -> [UInt8] {
            payload(count: count, tarSize: tarSize, names: names, places: places, attributes: attributes, checksums: checksums)
        }

        static let tampers: [Tamper] = [
            Tamper(name: "a count of two over one member's sections", expected: .corrupt) { $0 = one(count: 2) },
            Tamper(name: "unknown checksum kind", expected: .corrupt) { $0[80] = 2 },
            Tamper(name: "header size below 96", expected: .corrupt) { $0[12] = 95 },
            Tamper(name: "header size absurd", expected: .corrupt) { $0[14] = 1 },
            Tamper(name: "header cut short", expected: .corrupt) { $0 = Array($0[0..<90]) },
            Tamper(name: "a section past the block", expected: .corrupt) { $0[62] = 1 },
            Tamper(name: "sizes overflowing", expected: .corrupt) { for i in 72..<80 { $0[i] = 0xFF } },
            Tamper(name: "count past what the sections hold", expected: .corrupt) {
                $0 = one(places: [UInt8(ascii: "0"), 0] + leb(0) + leb(0), count: 1)
            },
            Tamper(name: "checksums not whole", expected: .corrupt) { $0 = one(checksums: [1, 2, 3]) },
            Tamper(name: "a regular file without its checksum", expected: .corrupt) { $0 = one(checksums: []) },
            Tamper(name: "more checksums than regular files", expected: .corrupt) {
                $0 = one(places: [UInt8(ascii: "5"), 0] + leb(0) + leb(0) + leb(0))
            },
            Tamper(name: "the first path sharing bytes with nothing", expected: .corrupt) {
                $0 = one(names: leb(1) + leb(1) + [UInt8(ascii: "f")])
            },
            Tamper(name: "a number past 64 bits", expected: .corrupt) {
                $0 = one(places: [UInt8(ascii: "0"), 0] + [UInt8](repeating: 0xFF, count: 9) + [0x02] + leb(0) + leb(3))
            },
            Tamper(name: "a number that never ends", expected: .corrupt) {
                $0 = one(places: [UInt8(ascii: "0"), 0] + leb(0) + leb(0) + [0x83])
            },
            Tamper(name: "a path holding a NUL", expected: .corrupt) {
                $0 = one(names: leb(0) + leb(3) + [UInt8(ascii: "f"), 0, UInt8(ascii: "g")])
            },
            Tamper(name: "a path that is not UTF-8", expected: .corrupt) { $0 = one(names: leb(0) + leb(1) + [0xFF]) },
            Tamper(name: "a path longer than the tar parser accepts", expected: .corrupt) {
                $0 = one(
                    names: leb(0) + leb(UInt64(ArchiveIndex.maxNameLength + 1))
                        + [UInt8](repeating: 0x61, count: ArchiveIndex.maxNameLength + 1))
            },
            Tamper(name: "a link target holding a NUL", expected: .corrupt) {
                $0 = one(
                    places: [UInt8(ascii: "2"), 0] + leb(0) + leb(0) + leb(0),
                    attributes: leb(0) + leb(0) + leb(0o777) + leb(0) + leb(0) + leb(2) + [UInt8(ascii: "t"), 0], checksums: [])
            },
            Tamper(name: "a link target past the section", expected: .corrupt) {
                $0 = one(
                    places: [UInt8(ascii: "2"), 0] + leb(0) + leb(0) + leb(0),
                    attributes: leb(0) + leb(0) + leb(0o777) + leb(0) + leb(0) + leb(200) + [UInt8(ascii: "t")], checksums: [])
            },
            Tamper(name: "nanoseconds out of range", expected: .corrupt) {
                $0 = one(attributes: leb(0) + leb(1_000_000_000) + leb(0o644) + leb(0) + leb(0) + leb(0))
            },
            Tamper(name: "a mode past 32 bits", expected: .corrupt) {
                $0 = one(attributes: leb(0) + leb(0) + leb(1 << 32) + leb(0) + leb(0) + leb(0))
            },
            Tamper(name: "a size past the tar stream", expected: .corrupt) {
                $0 = one(places: [UInt8(ascii: "0"), 0] + leb(0) + leb(0) + leb(1537))
            },
            Tamper(name: "a header offset overflowing", expected: .corrupt) {
                $0 = one(places: [UInt8(ascii: "0"), 0] + leb(UInt64.max - 100) + leb(0) + leb(0))
            },
            Tamper(name: "bytes left over in a section", expected: .corrupt) {
                $0 = one(places: [UInt8(ascii: "0"), 0] + leb(0) + leb(0) + leb(3) + [0])
            }
        ]

        @Test func theUntamperedPayloadDecodes() throws {
            let index = try ArchiveIndex.decode(Self.one())
            #expect(index.entries.map(\.path) == ["f"])
            #expect(index.entries[0].checksum == 1)
        }

        @Test(arguments: tampers)
        func tamperedPayloadsAreRefused(_ tamper: Tamper) throws {
            var bytes = Self.one()
            tamper.change(&bytes)
            let error = #expect(throws: ArchiveError.self) { try ArchiveIndex.decode(bytes) }
            #expect(error?.code == tamper.expected, "\(String(describing: error))")
            #expect(error?.message.hasPrefix("archive index") == true, "\(String(describing: error))")
        }

        /// Keeping only some entries (a reader opened for a few members) checks every member as
        /// a full decoding does: whatever is kept, a tampered payload is refused with the same
        /// error.
        @Test(arguments: tampers)
        func tamperedPayloadsAreRefusedWhateverIsKept(_ tamper: Tamper) throws {
            var bytes = Self.one()
            tamper.change(&bytes)
            let full = #expect(throws: ArchiveError.self) { try ArchiveIndex.decode(bytes) }
            for keep in [false, true] {
                let kept = #expect(throws: ArchiveError.self) { try ArchiveIndex.decode(bytes, keeping: { _ in keep }) }
                #expect(kept?.code == full?.code && kept?.message == full?.message, "keeping \(keep): \(String(describing: kept))")
            }
        }

        /// The entries kept are the ones a selection chooses from a full decoding, in order, with
        /// every field.
        @Test(
            arguments: [
                ["a/b/c2.txt"], ["a/b"], ["a/b/"], ["l"], ["d/\u{E9}.txt", "a/b/c0.txt"], ["a/b/c2.txt", "a/b/c2.txt/"], ["nothing"]
            ] as [Set<String>])
        func theEntriesKeptAreTheOnesASelectionChooses(selection: Set<String>) throws {
            var entries: [ArchiveEntry] = []
            var offset: UInt64 = 0
            func add(_ path: String, _ kind: TarEntryKind, size: UInt64 = 0, link: String? = nil) {
                entries.append(
                    ArchiveEntry(
                        path: path, kind: kind, size: size, mode: kind == .directory ? 0o755 : 0o644, uid: 7, gid: 8,
                        mtime: TarTimestamp(seconds: 1_700_000_000 + Int64(entries.count), nanoseconds: 5), linkTarget: link,
                        headerOffset: offset, dataOffset: offset + 512, checksum: kind == .regular ? UInt64(entries.count) : nil,
                        hasPaxHeader: false))
                offset += 512 + (size + 511) / 512 * 512
            }
            add("a/", .directory)
            add("a/b/", .directory)
            for file in 0..<4 { add("a/b/c\(file).txt", .regular, size: UInt64(10 + file)) }
            add("a/bc.txt", .regular, size: 3)
            add("d/\u{E9}.txt", .regular, size: 4)
            add("l", .symbolicLink, link: "a/b/c1.txt")
            add("a/b/c2.txt", .regular, size: 9)  // named twice: both are kept
            let index = ArchiveIndex(entries: entries, tarSize: offset + 1024, chunkSize: 1 << 20, metadata: ["k": "v"])
            let decoded = try ArchiveIndex.decode(
                index.encoded(), keeping: { MemberFilter(selection).selects(utf8: $0) })
            #expect(decoded.kept)
            #expect(decoded.index.entries == entries.filter { TarConsumer.selected($0.path, by: MemberFilter(selection)) })
            #expect(decoded.index.tarSize == index.tarSize && decoded.index.metadata == ["k": "v"])
            // A version 1 index has no names section to choose from: it is decoded whole.
            let one = try ArchiveIndex.decode(index.encodedVersion1(), keeping: { _ in false })
            #expect(!one.kept && one.index.entries == entries)
        }

        /// The paths alone are held to the same checks: each bad name the full decoding refuses,
        /// `decodePaths` refuses too.
        @Test(arguments: [
            [UInt8(ascii: "f"), 0, UInt8(ascii: "g")], [0xFF], [0xC3], [0xED, 0xA0, 0x80], [0xC0, 0xAF], [0xF4, 0x90, 0x80, 0x80]
        ])
        func badNamesAreRefusedByThePathsAlone(_ name: [UInt8]) throws {
            let bytes = Self.one(names: Self.leb(0) + Self.leb(UInt64(name.count)) + name)
            let header = try ArchiveIndex.header(bytes, maxEntries: 10, archiveSize: nil, blockOffset: nil)
            let error = #expect(throws: ArchiveError.self) {
                try ArchiveIndex.decodePaths(bytes, header: header, blockOffset: nil, maxNameBytes: 1 << 20)
            }
            #expect(error?.code == .corrupt)
            #expect(error?.message.contains("the path of entry 0") == true, "\(String(describing: error))")
            #expect(throws: ArchiveError.self) { try ArchiveIndex.decode(bytes) }
        }

        /// Names beyond ASCII are kept byte for byte, by the paths alone and by the whole index.
        @Test func namesBeyondASCIIDecode() throws {
            for name in ["caf\u{E9}", "e\u{301}", "\u{65E5}\u{672C}", "\u{1F600}.txt", "\u{202E}txt.exe"] {
                let bytes = Self.one(names: Self.leb(0) + Self.leb(UInt64(name.utf8.count)) + Array(name.utf8))
                let header = try ArchiveIndex.header(bytes, maxEntries: 10, archiveSize: nil, blockOffset: nil)
                let paths = try ArchiveIndex.decodePaths(bytes, header: header, blockOffset: nil, maxNameBytes: 1 << 20)
                #expect(Array(paths[0]) == Array(name.utf8))
                #expect(try ArchiveIndex.decode(bytes).entries.map { Array($0.path.utf8) } == [Array(name.utf8)])
            }
        }

        /// 1,000 paths, each sharing 30,000 bytes with the one before: 30 MB of names from a
        /// payload of a few kilobytes once compressed.
        static func amplified(tarSize: UInt64) -> [UInt8] {
            let count = 1000
            var names = leb(0) + leb(30_000) + [UInt8](repeating: UInt8(ascii: "a"), count: 30_000)
            var places: [UInt8] = []
            var attributes: [UInt8] = []
            for i in 0..<count {
                if i > 0 { names += leb(29_999) + leb(1) + [UInt8(ascii: "b")] }
                places += [UInt8(ascii: "5"), 0] + leb(i == 0 ? 0 : 512) + leb(0) + leb(0)
                attributes += leb(0) + leb(0) + leb(0o755) + leb(0) + leb(0) + leb(0)
            }
            return payload(count: UInt64(count), tarSize: tarSize, names: names, places: places, attributes: attributes)
        }

        @Test func pathsThatShareTheirBytesCannotAddUpPastTheLimits() throws {
            // Held to the tar stream, which holds every name in full ...
            let small = #expect(throws: ArchiveError.self) { try ArchiveIndex.decode(Self.amplified(tarSize: 4 << 20)) }
            #expect(small?.code == .limitExceeded, "\(String(describing: small))")
            // ... and to the caller's limit.
            let bytes = Self.amplified(tarSize: 1 << 30)
            let limited = #expect(throws: ArchiveError.self) { try ArchiveIndex.decode(bytes, maxNameBytes: 16 << 20) }
            #expect(limited?.code == .limitExceeded)
            let header = try ArchiveIndex.header(bytes, maxEntries: 10_000, archiveSize: nil, blockOffset: nil)
            let paths = #expect(throws: ArchiveError.self) {
                try ArchiveIndex.decodePaths(bytes, header: header, blockOffset: nil, maxNameBytes: 16 << 20)
            }
            #expect(paths?.code == .limitExceeded)
            // With room for them, they decode: the limit is what refused them.
            #expect(try ArchiveIndex.decode(bytes, maxNameBytes: 64 << 20).entries.count == 1000)
        }

        /// The paths' bytes are counted before they are built and allocated once: a list grown by
        /// doubling would hold up to twice what it needs, in fresh pages.
        @Test func theNamesAreSizedBeforeTheyAreBuilt() throws {
            // 600 paths of 70 bytes, each sharing its first 60 with the one before.
            var names = Self.leb(0) + Self.leb(70) + [UInt8](repeating: UInt8(ascii: "a"), count: 70)
            func digits(_ i: Int) -> String { String(repeating: "0", count: 10 - String(i).count) + String(i) }
            for i in 1..<600 { names += Self.leb(60) + Self.leb(10) + Array(digits(i).utf8) }
            let cursor = IndexCursor(names, from: 0, count: names.count, section: "names", blockOffset: nil)
            #expect(ArchiveIndex.pathBytes(cursor, count: 600, limit: 1 << 20) == 42_000)
            // Past the limit, or damaged, there is nothing to size: the decoding says why.
            #expect(ArchiveIndex.pathBytes(cursor, count: 600, limit: 41_999) == nil)
            #expect(ArchiveIndex.pathBytes(cursor, count: 601, limit: 1 << 20) == nil)
            let oversharing = Self.leb(0) + Self.leb(1) + [UInt8(ascii: "a")] + Self.leb(2) + Self.leb(0)
            #expect(
                ArchiveIndex.pathBytes(
                    IndexCursor(oversharing, from: 0, count: oversharing.count, section: "names", blockOffset: nil), count: 2,
                    limit: 1 << 20) == nil)

            var decoding = cursor
            var budget = ArchiveIndex.NameBudget(maxNameBytes: 1 << 20, tarSize: 1 << 30)
            let paths = try ArchiveIndex.decodeNames(&decoding, count: 600, budget: &budget)
            #expect(paths.bytes.count == 42_000)
            #expect(Array(paths[599]) == Array((String(repeating: "a", count: 60) + digits(599)).utf8))
            // Grown as they came, these 42,000 bytes ended in room for 81,912.
            #expect(paths.bytes.capacity < 42_000 + 42_000 / 8, "capacity \(paths.bytes.capacity)")
        }
    }
}
