import Tar
import Testing

struct TarParserTests {
    /// A varied archive: global header, pax and plain members, sizes around block boundaries,
    /// links, a directory, a > 100-byte path and UTF-8.
    static func sampleArchive() throws -> (bytes: [UInt8], members: [(TarHeader, [UInt8])]) {
        var rng = SeededGenerator(seed: 42)
        func content(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) } }
        let list: [(TarHeader, [UInt8])] = [
            (TarHeader(path: "root/", kind: .directory, mode: 0o755, mtime: .init(seconds: 1_700_000_000, nanoseconds: 5)), []),
            (TarHeader(path: "root/empty", kind: .regular), []),
            (TarHeader(path: "root/one", kind: .regular, size: 1), content(1)),
            (TarHeader(path: "root/block", kind: .regular, size: 512), content(512)),
            (TarHeader(path: "root/block+1", kind: .regular, size: 513), content(513)),
            (TarHeader(path: "root/" + String(repeating: "\u{540D}", count: 50), kind: .regular, size: 3000, uid: 3_000_000), content(3000)),
            (TarHeader(path: "root/link", kind: .symbolicLink, mode: 0o777, linkTarget: String(repeating: "../", count: 50) + "x"), []),
            (TarHeader(path: "root/hard", kind: .hardLink, linkTarget: "root/one"), []),
            (TarHeader(path: "root/tail", kind: .regular, size: 10_000, userName: "\u{E9}l\u{E9}ve"), content(10_000)),
        ]
        return (try archive(list, global: [(key: "AMK.version", value: "1"), (key: "comment", value: "x")]), list)
    }

    @Test func reportsEveryEventInOrder() throws {
        let (bytes, list) = try Self.sampleArchive()
        let events = try parse(bytes)
        #expect(events.first == .global(["AMK.version=1", "comment=x"], offset: 0))
        #expect(events.last == .end(offset: UInt64(bytes.count - 1024)))
        let found = members(events)
        #expect(found.map(\.header) == list.map(\.0))
        let bodies = contents(events)
        for (header, content) in list {
            #expect(bodies[header.path] == content, "\(header.path)")
        }
        // Every member is followed by exactly one memberEnd, data only in between.
        var open = false
        for event in events {
            switch event {
            case .member: #expect(!open); open = true
            case .memberEnd: #expect(open); open = false
            case .data(let data, _): #expect(open && !data.isEmpty)
            default: #expect(!open)
            }
        }
    }

    @Test func dataOffsetsPointIntoTheStream() throws {
        let (bytes, _) = try Self.sampleArchive()
        for event in try parse(bytes) {
            if case .data(let data, let offset) = event {
                #expect(Array(bytes[Int(offset)..<(Int(offset) + data.count)]) == data)
            }
        }
    }

    @Test func byteByByteGivesSameEventsAsWhole() throws {
        let (bytes, _) = try Self.sampleArchive()
        let whole = try parse(bytes)
        let single = try parse(bytes, sliceSize: { _ in 1 })
        #expect(single == whole)
    }

    @Test(arguments: [1, 2, 3, 4, 5])
    func randomSlicesGiveSameEventsAsWhole(seed: UInt64) throws {
        let (bytes, _) = try Self.sampleArchive()
        let whole = try parse(bytes)
        let sliced = try parse(bytes, sliceSize: { rng in
            [Int.random(in: 1...10, using: &rng), Int.random(in: 1...700, using: &rng), Int.random(in: 500...5000, using: &rng)][Int.random(in: 0..<3, using: &rng)]
        }, seed: seed)
        #expect(sliced == whole)
    }

    @Test func bytesAfterEndMarkerAreIgnored() throws {
        let (bytes, _) = try Self.sampleArchive()
        let trailer: [UInt8] = Array("AMKINDEX not tar at all".utf8) + [UInt8](repeating: 0xFF, count: 3000)
        var parser = TarParser()
        var ends = 0
        var total = 0
        try (bytes + trailer).withUnsafeBytes { all in
            try parser.consume(all) { event in
                if case .end = event { ends += 1 }
                total += 1
            }
            #expect(parser.isAtEnd)
            try parser.consume(UnsafeRawBufferPointer(rebasing: all[0..<100])) { _ in total += 1000 }
        }
        try parser.finish()
        #expect(ends == 1)
        #expect(total < 1000)
        #expect(parser.offset == UInt64(bytes.count + trailer.count + 100))
    }

    @Test func isAtEndOnlyAfterSecondZeroBlock() throws {
        var parser = TarParser()
        let zeros = [UInt8](repeating: 0, count: 512)
        try zeros.withUnsafeBytes { try parser.consume($0) { _ in } }
        #expect(!parser.isAtEnd)
        var end: UInt64?
        try zeros.withUnsafeBytes { try parser.consume($0) { if case .end(let offset) = $0 { end = offset } } }
        #expect(parser.isAtEnd && end == 0)
    }

    /// GNU tar reads on after a single zero block followed by a header.
    @Test func loneZeroBlockIsSkipped() throws {
        let bytes = RawBlock(name: "a").bytes + [UInt8](repeating: 0, count: 512) + RawBlock(name: "b").bytes + TarEncoder.endOfArchive
        let events = try parse(bytes)
        #expect(members(events).map(\.header.path) == ["a", "b"])
        #expect(members(events)[1].headerOffset == 1024)
        #expect(events.last == .end(offset: 1536))
    }

    // MARK: Extended headers

    @Test func globalRecordsApplyAsDefaultsAndXOverrides() throws {
        let global = paxRecord("uid", "77") + paxRecord("uname", "glob") + paxRecord("path", "ignored") + paxRecord("vendor.key", "v")
        let local = paxRecord("uid", "88") + paxRecord("uname", "")
        let bytes = RawBlock(name: "pax_global_header", typeflag: UInt8(ascii: "g"), size: UInt64(global.count)).bytes + padded(global)
            + RawBlock(name: "a").bytes
            + RawBlock(name: "PaxHeaders/b", typeflag: UInt8(ascii: "x"), size: UInt64(local.count)).bytes + padded(local)
            + RawBlock(name: "b").bytes
            + TarEncoder.endOfArchive
        let events = try parse(bytes)
        #expect(events.first == .global(["uid=77", "uname=glob", "path=ignored", "vendor.key=v"], offset: 0))
        let found = members(events)
        #expect(found.map(\.header.path) == ["a", "b"])
        #expect(found[0].header.uid == 77 && found[0].header.userName == "glob")
        // An empty value deletes the keyword for this member: the ustar field (empty) is used.
        #expect(found[1].header.uid == 88 && found[1].header.userName == nil)
        #expect(found[1].hasPaxHeader && !found[0].hasPaxHeader)
    }

    @Test func paxSizeOverridesUstarSize() throws {
        let records = paxRecord("size", "5")
        let bytes = RawBlock(name: "PaxHeaders/s", typeflag: UInt8(ascii: "x"), size: UInt64(records.count)).bytes + padded(records)
            + RawBlock(name: "s", size: 0).bytes + padded([1, 2, 3, 4, 5]) + TarEncoder.endOfArchive
        let events = try parse(bytes)
        #expect(members(events).first?.header.size == 5)
        #expect(contents(events)["s"] == [1, 2, 3, 4, 5])
    }

    // MARK: finish()

    @Test func finishRequiresEndMarkerUnlessToldOtherwise() throws {
        let bytes = RawBlock(name: "a", size: 3).bytes + padded([1, 2, 3])
        let error = try #require(tarError { _ = try parse(bytes) })
        #expect(error.code == .truncated && error.offset == 1024)
        #expect(members(try parse(bytes, requireEndMarker: false)).count == 1)
        // One zero block, then nothing: also clean when the marker is not required.
        #expect(members(try parse(bytes + [UInt8](repeating: 0, count: 512), requireEndMarker: false)).count == 1)
        #expect(tarError { _ = try parse(bytes + [UInt8](repeating: 0, count: 512)) }?.code == .truncated)
        // Empty input.
        #expect(try parse([], requireEndMarker: false).isEmpty)
    }

    @Test func truncatedMemberNamesItsFirstHeaderBlock() throws {
        let (bytes, _) = try Self.sampleArchive()
        let events = try parse(bytes)
        let target = try #require(members(events).first { $0.header.path.hasPrefix("root/\u{540D}") })
        #expect(target.hasPaxHeader)
        // Cut in the content, in the padding, in the ustar block and in the pax records.
        for cut in [target.dataOffset + 100, target.dataOffset + 3000 + 10, target.dataOffset - 10, target.headerOffset + 600] {
            let error = try #require(tarError { _ = try parse(Array(bytes[0..<Int(cut)]), requireEndMarker: false) })
            #expect(error.code == .truncated, "cut at \(cut)")
            #expect(error.offset == target.headerOffset, "cut at \(cut): \(error)")
        }
        // Cut inside a plain header block: the error names that block.
        let plain = try #require(members(events).first { $0.header.path == "root/block+1" })
        #expect(!plain.hasPaxHeader)
        let error = try #require(tarError { _ = try parse(Array(bytes[0..<Int(plain.headerOffset + 100)]), requireEndMarker: false) })
        #expect(error.code == .truncated && error.offset == plain.headerOffset)
        #expect(error.description.hasPrefix("tar header at offset \(plain.headerOffset): "))
    }

    // MARK: Hostile input

    @Test func badChecksumNamesTheBlock() throws {
        var bytes = try Self.sampleArchive().bytes
        let target = try #require(members(try parse(bytes)).first { $0.header.path == "root/tail" })
        bytes[Int(target.headerOffset) + 5] ^= 0x01
        let error = try #require(tarError { _ = try parse(bytes) })
        #expect(error.code == .badChecksum)
        #expect(error.offset == target.headerOffset)
    }

    @Test func nonOctalSizeIsBadField() throws {
        var block = RawBlock(name: "b")
        block.set(124, "0000000012?")
        block.sealChecksum()
        let error = try #require(tarError { _ = try parse(RawBlock(name: "a").bytes + block.bytes + TarEncoder.endOfArchive) })
        #expect(error.code == .badField && error.offset == 512)
    }

    @Test func paxHeaderClaiming10GiBIsTooLarge() throws {
        let bytes = RawBlock(name: "PaxHeaders/x", typeflag: UInt8(ascii: "x"), size: 10 << 30).bytes + padded(Array("10 a=bcde\n".utf8))
        let error = try #require(tarError { _ = try parse(bytes) })
        #expect(error.code == .tooLarge && error.offset == 0)
        let global = RawBlock(name: "g", typeflag: UInt8(ascii: "g"), size: 10 << 30).bytes
        #expect(tarError { _ = try parse(global) }?.code == .tooLarge)
    }

    @Test func limitsAreConfigurable() throws {
        let records = paxRecord("path", String(repeating: "p", count: 300))
        let bytes = RawBlock(name: "PaxHeaders/x", typeflag: UInt8(ascii: "x"), size: UInt64(records.count)).bytes + padded(records)
            + RawBlock(name: "x").bytes + TarEncoder.endOfArchive
        #expect(members(try parse(bytes)).first?.header.path.utf8.count == 300)
        #expect(tarError { _ = try parse(bytes, limits: .init(maxPaxHeaderSize: 100)) }?.code == .tooLarge)
        #expect(tarError { _ = try parse(bytes, limits: .init(maxPathLength: 299)) }?.code == .tooLarge)
        #expect(TarParser.Limits().maxPaxHeaderSize == 1 << 20 && TarParser.Limits().maxPathLength == 64 * 1024)

        let longName = [UInt8](repeating: UInt8(ascii: "n"), count: 2000) + [0]
        let gnu = RawBlock(name: "././@LongLink", typeflag: UInt8(ascii: "L"), size: UInt64(longName.count), magic: .gnu).bytes + padded(longName)
            + RawBlock(name: "n", magic: .gnu).bytes + TarEncoder.endOfArchive
        #expect(members(try parse(gnu)).first?.header.path.utf8.count == 2000)
        #expect(tarError { _ = try parse(gnu, limits: .init(maxPathLength: 1999)) }?.code == .tooLarge)
    }

    @Test func sparseMembersAreUnsupported() throws {
        let sparse = RawBlock(name: "s", typeflag: UInt8(ascii: "S"), magic: .gnu).bytes + TarEncoder.endOfArchive
        #expect(tarError { _ = try parse(sparse) }?.code == .unsupported)
        let records = paxRecord("GNU.sparse.major", "1")
        let pax = RawBlock(name: "PaxHeaders/x", typeflag: UInt8(ascii: "x"), size: UInt64(records.count)).bytes + padded(records)
            + RawBlock(name: "x").bytes + TarEncoder.endOfArchive
        #expect(tarError { _ = try parse(pax) }?.code == .unsupported)
    }

    @Test func sizeBeyondAnyStreamIsTooLarge() throws {
        var block = RawBlock(name: "huge", magic: .gnu)
        block.setBytes(124, [0x80, 0, 0, 0] + [UInt8](repeating: 0xFF, count: 8))
        block.sealChecksum()
        let error = try #require(tarError { _ = try parse(RawBlock(name: "a").bytes + block.bytes) })
        #expect(error.code == .tooLarge && error.offset == 512)
    }

    @Test func extendedHeaderFollowedByEndMarkerIsAnError() throws {
        let records = paxRecord("path", "p")
        let bytes = RawBlock(name: "PaxHeaders/x", typeflag: UInt8(ascii: "x"), size: UInt64(records.count)).bytes + padded(records) + TarEncoder.endOfArchive
        let error = try #require(tarError { _ = try parse(bytes) })
        #expect(error.code == .badField && error.offset == 1024)
    }

    @Test func parserStaysFailedAfterAnError() throws {
        var block = RawBlock(name: "a")
        block.bytes[0] = UInt8(ascii: "b")
        var parser = TarParser()
        let first = tarError { try block.bytes.withUnsafeBytes { try parser.consume($0) { _ in } } }
        #expect(first?.code == .badChecksum)
        let again = tarError { try RawBlock(name: "ok").bytes.withUnsafeBytes { try parser.consume($0) { _ in } } }
        #expect(again == first)
        #expect(tarError { try parser.finish() } == first)
    }

    @Test func handlerErrorsPropagateAndStopTheParser() throws {
        struct Stop: Error {}
        var parser = TarParser()
        let bytes = try archive([(TarHeader(path: "a", kind: .regular, size: 3), [1, 2, 3])])
        #expect(throws: Stop.self) {
            try bytes.withUnsafeBytes { try parser.consume($0) { if case .data = $0 { throw Stop() } } }
        }
        #expect(tarError { try parser.finish() }?.code == .invalidValue)
    }

    /// Mutated and random input: any outcome but a crash is acceptable, and every error must
    /// be a TarError (never some other failure).
    @Test func mutatedArchivesNeverCrash() throws {
        let (original, _) = try Self.sampleArchive()
        var rng = SeededGenerator(seed: 7)
        var failures = 0
        for _ in 0..<600 {
            var bytes = original
            for _ in 0..<Int.random(in: 1...8, using: &rng) {
                let position = Int.random(in: 0..<min(bytes.count, 6000), using: &rng)
                bytes[position] = [0, 0xFF, UInt8(ascii: "7"), UInt8(ascii: " "), UInt8.random(in: 0...255, using: &rng)][Int.random(in: 0..<5, using: &rng)]
            }
            if Bool.random(using: &rng) { bytes = Array(bytes.prefix(Int.random(in: 0..<bytes.count, using: &rng))) }
            do {
                _ = try parse(bytes, sliceSize: { rng in Int.random(in: 1...2048, using: &rng) }, seed: rng.next())
            } catch is TarError {
                failures += 1
            }
        }
        #expect(failures > 0)
        for _ in 0..<200 {
            let garbage = (0..<Int.random(in: 0...4096, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            do { _ = try parse(garbage) } catch is TarError {}
        }
    }
}
