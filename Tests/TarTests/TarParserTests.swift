import Tar
import TestSupport
import Testing

@Suite(.background) struct TarParserTests {
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
            (
                TarHeader(path: "root/" + String(repeating: "\u{540D}", count: 50), kind: .regular, size: 3000, uid: 3_000_000),
                content(3000)
            ),
            (TarHeader(path: "root/link", kind: .symbolicLink, mode: 0o777, linkTarget: String(repeating: "../", count: 50) + "x"), []),
            (TarHeader(path: "root/hard", kind: .hardLink, linkTarget: "root/one"), []),
            (TarHeader(path: "root/tail", kind: .regular, size: 10_000, userName: "\u{E9}l\u{E9}ve"), content(10_000))
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
            case .member:
                #expect(!open)
                open = true
            case .memberEnd:
                #expect(open)
                open = false
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
        let sliced = try parse(
            bytes,
            sliceSize: { rng in
                [Int.random(in: 1...10, using: &rng), Int.random(in: 1...700, using: &rng), Int.random(in: 500...5000, using: &rng)][
                    Int.random(in: 0..<3, using: &rng)]
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

    /// GNU tar (with a warning), bsdtar and Python's tarfile stop at a single zero block followed
    /// by a header: a member after it is one they never show, so it is not read.
    @Test func aLoneZeroBlockEndsTheArchive() throws {
        let bytes = RawBlock(name: "a").bytes + [UInt8](repeating: 0, count: 512) + RawBlock(name: "b").bytes + TarEncoder.endOfArchive
        let events = try parse(bytes)
        #expect(members(events).map(\.header.path) == ["a"])
        #expect(events.last == .end(offset: 512))
    }

    /// Two headers of one kind for one member: for `x` GNU tar and bsdtar take the last one's
    /// records and Python merges both; for long names Python takes the first, GNU tar the last.
    @Test(arguments: [UInt8(ascii: "x"), UInt8(ascii: "L"), UInt8(ascii: "K")])
    func aSecondExtendedHeaderOfOneKindForOneMemberIsRefused(typeflag: UInt8) throws {
        let content = typeflag == UInt8(ascii: "x") ? paxRecord("comment", "c") : Array("name\0".utf8)
        let first = typeflag == UInt8(ascii: "x") ? paxRecord("size", "0") : Array("other\0".utf8)
        let bytes =
            RawBlock(name: "h1", typeflag: typeflag, size: UInt64(first.count)).bytes + padded(first)
            + RawBlock(name: "h2", typeflag: typeflag, size: UInt64(content.count)).bytes + padded(content)
            + RawBlock(name: "m", size: 0).bytes + TarEncoder.endOfArchive
        let error = #expect(throws: TarError.self) { try parse(bytes) }
        #expect(error?.code == .badField)
        #expect(error?.offset == 1024, "the second header is named")
        #expect(error?.message.contains("a second") == true && error?.message.contains("offset 0") == true, "\(String(describing: error))")
    }

    /// One of each kind is one member's headers, as GNU tar writes a long name with its pax
    /// records.
    @Test func oneExtendedHeaderOfEachKindIsAMembersHeaders() throws {
        let records = paxRecord("mtime", "5.5")
        let long = Array("long-name\0".utf8)
        let bytes =
            RawBlock(name: "././@LongLink", typeflag: UInt8(ascii: "L"), size: UInt64(long.count)).bytes + padded(long)
            + RawBlock(name: "PaxHeaders/x", typeflag: UInt8(ascii: "x"), size: UInt64(records.count)).bytes + padded(records)
            + RawBlock(name: "long-na", size: 0).bytes + TarEncoder.endOfArchive
        let found = members(try parse(bytes))
        #expect(found.map(\.header.path) == ["long-name"])
        #expect(found.first?.header.mtime == TarTimestamp(seconds: 5, nanoseconds: 500_000_000))
    }

    /// An `S` header in the POSIX format (or none) is a regular file, as GNU tar and bsdtar read
    /// it: the bytes where the old GNU format keeps a sparse map are the name's prefix here.
    @Test(arguments: [RawBlock.Magic.ustar, .v7])
    func anOldGNUSparseTypeWithoutTheGNUMagicIsARegularFile(magic: RawBlock.Magic) throws {
        var header = RawBlock(name: "s", typeflag: UInt8(ascii: "S"), size: 512, magic: magic)
        if magic == .ustar { header.set(345, "dir") }
        // What an old GNU map would say there: one run at 2^32, a real size of 2^33.
        header.set(386, "040000000000")
        header.set(398, "000000001000")
        header.set(483, "0100000000000")
        header.sealChecksum()
        let content = [UInt8](repeating: UInt8(ascii: "A"), count: 512)
        let events = try parse(header.bytes + content + TarEncoder.endOfArchive)
        let found = members(events)
        let name = magic == .ustar ? "dir/s" : "s"
        #expect(found.map(\.header.path) == [name])
        #expect(found.first?.header.kind == .regular && found.first?.header.size == 512)
        #expect(found.first?.isSparse == false)
        #expect(contents(events)[name] == content)
    }

    /// GNU tar and Python's tarfile apply a global `path`, `linkpath` or `size` to every member,
    /// bsdtar ignores it: refused, naming the keyword.
    @Test(arguments: ["path", "linkpath", "size"])
    func aGlobalNameOrSizeIsRefused(key: String) throws {
        let global = paxRecord(key, key == "size" ? "0" : "renamed")
        let bytes =
            RawBlock(name: "pax_global_header", typeflag: UInt8(ascii: "g"), size: UInt64(global.count)).bytes + padded(global)
            + RawBlock(name: "a", size: 0).bytes + TarEncoder.endOfArchive
        let error = #expect(throws: TarError.self) { try parse(bytes) }
        #expect(error?.code == .badPaxRecord)
        #expect(error?.offset == 0)
        #expect(error?.message.contains("\"\(key)\" in a global header") == true, "\(String(describing: error))")
    }

    // MARK: Extended headers

    /// A global header's owner and time are reported, not given to the members: GNU tar and
    /// bsdtar extract each member with its own, and a member read alone from the index never sees
    /// the global header (a global `uname=root` made a full extraction's set-user-ID file root's,
    /// and a selection's uid 1000's). A malformed value is still refused.
    @Test func globalOwnersAndTimesAreNotAppliedAndXOverrides() throws {
        let global =
            paxRecord("uid", "77") + paxRecord("gid", "78") + paxRecord("uname", "root") + paxRecord("gname", "root")
            + paxRecord("mtime", "5.25") + paxRecord("vendor.key", "v")
        let local = paxRecord("uid", "88") + paxRecord("uname", "")
        var plain = RawBlock(name: "a")
        plain.set(108, "0001750")  // uid 1000
        plain.set(265, "nobody-here")
        plain.sealChecksum()
        let bytes =
            RawBlock(name: "pax_global_header", typeflag: UInt8(ascii: "g"), size: UInt64(global.count)).bytes + padded(global)
            + plain.bytes
            + RawBlock(name: "PaxHeaders/b", typeflag: UInt8(ascii: "x"), size: UInt64(local.count)).bytes + padded(local)
            + RawBlock(name: "b").bytes
            + TarEncoder.endOfArchive
        let events = try parse(bytes)
        #expect(events.first == .global(["uid=77", "gid=78", "uname=root", "gname=root", "mtime=5.25", "vendor.key=v"], offset: 0))
        let found = members(events)
        #expect(found.map(\.header.path) == ["a", "b"])
        #expect(found[0].header.uid == 1000 && found[0].header.userName == "nobody-here", "\(found[0].header)")
        #expect(found[0].header.gid != 78 && found[0].header.groupName != "root" && found[0].header.mtime.seconds != 5)
        // An empty value deletes the keyword for this member: the ustar field (empty) is used.
        #expect(found[1].header.uid == 88 && found[1].header.userName == nil)
        #expect(found[1].hasPaxHeader && !found[0].hasPaxHeader)
        for (key, value) in [("uid", "x"), ("mtime", "soon")] {
            let bad = paxRecord(key, value)
            let refused =
                RawBlock(name: "pax_global_header", typeflag: UInt8(ascii: "g"), size: UInt64(bad.count)).bytes + padded(bad)
                + RawBlock(name: "a").bytes + TarEncoder.endOfArchive
            #expect(throws: TarError.self) { try parse(refused) }
        }
    }

    @Test func paxSizeOverridesUstarSize() throws {
        let records = paxRecord("size", "5")
        let bytes =
            RawBlock(name: "PaxHeaders/s", typeflag: UInt8(ascii: "x"), size: UInt64(records.count)).bytes + padded(records)
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
        let bytes =
            RawBlock(name: "PaxHeaders/x", typeflag: UInt8(ascii: "x"), size: UInt64(records.count)).bytes + padded(records)
            + RawBlock(name: "x").bytes + TarEncoder.endOfArchive
        #expect(members(try parse(bytes)).first?.header.path.utf8.count == 300)
        #expect(tarError { _ = try parse(bytes, limits: .init(maxPaxHeaderSize: 100)) }?.code == .tooLarge)
        #expect(tarError { _ = try parse(bytes, limits: .init(maxPathLength: 299)) }?.code == .tooLarge)
        #expect(TarParser.Limits().maxPaxHeaderSize == 1 << 20 && TarParser.Limits().maxPathLength == 64 * 1024)

        let longName = [UInt8](repeating: UInt8(ascii: "n"), count: 2000) + [0]
        let gnu =
            RawBlock(name: "././@LongLink", typeflag: UInt8(ascii: "L"), size: UInt64(longName.count), magic: .gnu).bytes + padded(longName)
            + RawBlock(name: "n", magic: .gnu).bytes + TarEncoder.endOfArchive
        #expect(members(try parse(gnu)).first?.header.path.utf8.count == 2000)
        #expect(tarError { _ = try parse(gnu, limits: .init(maxPathLength: 1999)) }?.code == .tooLarge)
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
        let bytes =
            RawBlock(name: "PaxHeaders/x", typeflag: UInt8(ascii: "x"), size: UInt64(records.count)).bytes + padded(records)
            + TarEncoder.endOfArchive
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
                bytes[position] =
                    [0, 0xFF, UInt8(ascii: "7"), UInt8(ascii: " "), UInt8.random(in: 0...255, using: &rng)][
                        Int.random(in: 0..<5, using: &rng)]
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

    // MARK: GNU long names and NUL

    /// A GNU long name ends at its first NUL, as the kernel reads it: "..\0/etc/x" is the name
    /// "..", which the extractor's `..` check sees, and nothing after the NUL reaches the name.
    @Test func gnuLongNamesEndAtTheFirstNul() throws {
        let name = Array("..".utf8) + [0] + Array("/etc/passwd".utf8) + [0, 0xFF, 0xFE]
        let link = Array("../..".utf8) + [0] + Array("/x".utf8) + [0]
        let bytes =
            extendedHeader("L", name) + extendedHeader("K", link)
            + RawBlock(name: "placeholder", typeflag: UInt8(ascii: "2"), magic: .gnu).bytes
            + extendedHeader("L", Array("ok".utf8) + [0] + [0xC3, 0x28, 0xFF]) + RawBlock(name: "p", magic: .gnu).bytes
            + TarEncoder.endOfArchive
        let found = members(try parse(bytes))
        #expect(found.count == 2)
        #expect(found.first?.header.path == "..")
        #expect(found.first?.header.linkTarget == "../..")
        #expect(found.first?.headerOffset == 0)
        // Invalid UTF-8 after the NUL is not part of the name.
        #expect(found.last?.header.path == "ok")
        for member in found {
            #expect(!member.header.path.utf8.contains(0) && member.header.linkTarget?.utf8.contains(0) != true)
        }
    }

    /// A member with both a pax `path` (or `linkpath`) and a GNU `L` (or `K`) record that differ
    /// is refused, in either order: GNU tar takes the pax name, bsdtar and Python's tarfile the
    /// first record's, and amk took the last, so `tar -tvf` could show a name amk never wrote.
    /// The same name in both is one name; either record alone names the member.
    @Test(arguments: [true, false])
    func aPaxNameAndADifferentGNULongNameAreRefused(paxFirst: Bool) throws {
        func member(pax: [UInt8], long: [UInt8], typeflag: UInt8 = UInt8(ascii: "0")) -> [UInt8] {
            let paxHeader = RawBlock(name: "PaxHeaders/x", typeflag: UInt8(ascii: "x"), size: UInt64(pax.count)).bytes + padded(pax)
            return (paxFirst ? paxHeader + long : long + paxHeader) + RawBlock(name: "ustar", typeflag: typeflag, magic: .gnu).bytes
        }
        let agreeing =
            member(pax: paxRecord("path", "same"), long: extendedHeader("L", Array("same".utf8) + [0]))
            + extendedHeader("L", Array("onlyL".utf8) + [0]) + RawBlock(name: "u", magic: .gnu).bytes + TarEncoder.endOfArchive
        #expect(members(try parse(agreeing)).map(\.header.path) == ["same", "onlyL"])

        let paths = member(pax: paxRecord("path", "fromX"), long: extendedHeader("L", Array("fromL".utf8) + [0]))
        let pathError = try #require(tarError { _ = try parse(paths + TarEncoder.endOfArchive) })
        #expect(pathError.code == .badField && pathError.offset == 0)
        #expect(pathError.message.contains("\"fromX\"") && pathError.message.contains("\"fromL\""), "\(pathError.message)")

        let links = member(
            pax: paxRecord("linkpath", "toX"), long: extendedHeader("K", Array("toL".utf8) + [0]), typeflag: UInt8(ascii: "2"))
        let linkError = try #require(tarError { _ = try parse(links + TarEncoder.endOfArchive) })
        #expect(linkError.message.contains("link target"), "\(linkError.message)")
    }

    /// A regular file by its typeflag whose name ends in "/" is a folder (the pre-POSIX
    /// spelling); one that also claims content is refused as damage, as GNU tar and bsdtar refuse
    /// it. Read as a folder, its 1,400 bytes were skipped silently, and a header hidden there was
    /// a member for them and none for amk. Without content it is still a folder.
    @Test func aFolderByNameThatClaimsContentIsRefused() throws {
        let folder = RawBlock(name: "dir/").bytes
        let ok = folder + RawBlock(name: "dir/a").bytes + TarEncoder.endOfArchive
        #expect(members(try parse(ok)).map(\.header.kind) == [.directory, .regular])
        let content = [UInt8](repeating: 7, count: 1400)
        let bad = RawBlock(name: "file/", size: UInt64(content.count)).bytes + padded(content) + TarEncoder.endOfArchive
        let error = try #require(tarError { _ = try parse(bad) })
        #expect(error.code == .badField && error.offset == 0)
        #expect(error.message.contains("'file/'") && error.message.contains("1400 bytes"), "\(error.message)")
    }

    /// A hard link (or symbolic link, device, FIFO, volume label) that claims content: GNU tar,
    /// bsdtar and Python read the next header right after a hard link's, so a header hidden in
    /// its "content" was a member to them and content to amk (`tar -t` showed `benign.txt`,
    /// amk extracted a set-user-ID `evil.sh` from the same bytes). Refused as damage, naming the
    /// member; with a size of 0 each is read as before.
    @Test(arguments: ["1", "2", "3", "4", "6", "V"])
    func aLinkOrDeviceThatClaimsContentIsRefused(typeflag: String) throws {
        let flag = UInt8(ascii: typeflag.unicodeScalars.first!)
        let hidden = RawBlock(name: "evil.sh").bytes
        let bad =
            RawBlock(name: "a.txt").bytes + RawBlock(name: "h", typeflag: flag, size: 512).bytes + hidden
            + TarEncoder.endOfArchive
        let error = try #require(tarError { _ = try parse(bad) })
        #expect(error.code == .badField && error.offset == 512, "\(error)")
        #expect(error.message.contains("'h'") && error.message.contains("512 bytes of content"), "\(error.message)")

        let fine = RawBlock(name: "a.txt").bytes + RawBlock(name: "h", typeflag: flag).bytes + TarEncoder.endOfArchive
        #expect(members(try parse(fine)).map(\.header.path) == ["a.txt", "h"])
    }

    /// An emptied name: POSIX readers (bsdtar) take the ustar header's name for a pax `path=`
    /// with no value, GNU tar "." and Python "", so `tar -t` never showed the `evil.txt` that
    /// amk and bsdtar wrote. Refused, as is an empty `linkpath` and an empty GNU long name.
    @Test func anEmptiedNameIsRefused() throws {
        let cases: [[UInt8]] = [
            extendedHeader("x", paxRecord("path", "")) + RawBlock(name: "evil.txt").bytes,
            extendedHeader("x", paxRecord("linkpath", "")) + RawBlock(name: "l", typeflag: UInt8(ascii: "2")).bytes,
            extendedHeader("L", [0]) + RawBlock(name: "evil.txt", magic: .gnu).bytes,
            extendedHeader("K", [0]) + RawBlock(name: "l", typeflag: UInt8(ascii: "2"), magic: .gnu).bytes
        ]
        for bytes in cases {
            let error = try #require(tarError { _ = try parse(bytes + TarEncoder.endOfArchive) })
            #expect(error.offset == 0, "\(error)")
            #expect(error.message.contains("empty") && error.message.contains("disagree"), "\(error.message)")
        }
        // Another record emptied still only drops that keyword.
        let uname = extendedHeader("x", paxRecord("uname", "")) + RawBlock(name: "ok.txt").bytes + TarEncoder.endOfArchive
        #expect(members(try parse(uname)).map(\.header.path) == ["ok.txt"])
    }

    // MARK: Names that are not UTF-8

    /// A path, link target or owner name that is not valid UTF-8 keeps its bytes, whichever
    /// header carried it: the invalid byte 0xFF is the escape scalar U+10FFFF (RawName), and
    /// encoding the name gives the archive's bytes back.
    @Test func namesThatAreNotUTF8KeepTheirBytes() throws {
        let invalid: [UInt8] = [0x66, 0xFF, 0x67]  // "f", an invalid byte, "g"
        let escaped = "f\u{10FFFF}g"
        var ustarName = RawBlock(name: "")
        ustarName.setBytes(0, invalid)
        ustarName.sealChecksum()
        var ustarLink = RawBlock(name: "l1", typeflag: UInt8(ascii: "2"))
        ustarLink.setBytes(157, invalid)
        ustarLink.sealChecksum()
        let bytes =
            ustarName.bytes
            + extendedHeader("x", paxRecord(Array("path".utf8), invalid)) + RawBlock(name: "p").bytes
            + extendedHeader("x", paxRecord(Array("linkpath".utf8), invalid)) + RawBlock(name: "l2", typeflag: UInt8(ascii: "1")).bytes
            + extendedHeader("L", invalid + [0]) + RawBlock(name: "gnu", magic: .gnu).bytes
            + extendedHeader("K", invalid + [0]) + RawBlock(name: "l3", typeflag: UInt8(ascii: "2"), magic: .gnu).bytes
            + ustarLink.bytes
            + extendedHeader("x", paxRecord("path", "overridden")) + ustarName.bytes
            + extendedHeader("x", paxRecord(Array("uname".utf8), invalid)) + RawBlock(name: "owner").bytes
            + TarEncoder.endOfArchive
        let found = members(try parse(bytes)).map(\.header)
        #expect(found.map(\.path) == [escaped, escaped, "l2", escaped, "l3", "l1", "overridden", "owner"])
        #expect(found[2].linkTarget == escaped && found[4].linkTarget == escaped && found[5].linkTarget == escaped)
        #expect(found[7].userName == escaped)
        #expect(RawName.encode(found[0].path) == invalid)
    }

    /// Different bytes stay different names: two invalid names and a valid one holding U+FFFD
    /// (which a repairing decoder would have made one string) are three names.
    @Test func differentInvalidNamesStayDifferent() throws {
        let names: [[UInt8]] = [[0x61, 0xFF], [0x61, 0xFE], Array("a\u{FFFD}".utf8)]
        let bytes =
            names.flatMap { extendedHeader("x", paxRecord(Array("path".utf8), $0)) + RawBlock(name: "p").bytes } + TarEncoder.endOfArchive
        let found = members(try parse(bytes)).map(\.header)
        #expect(found.map(\.path) == ["a\u{10FFFF}", "a\u{10FFFE}", "a\u{FFFD}"])
        #expect(found.map { RawName.encode($0.path) } == names)
    }

    // MARK: Not a tar stream

    /// Data that is no tar at all (a compressed text file, random bytes, nothing) is named as
    /// such, not as a damaged archive, whether fed whole or byte by byte.
    @Test(arguments: ["random", "text", "short text", "empty"])
    func nonTarDataIsNotATarStream(kind: String) throws {
        var rng = SeededGenerator(seed: 11)
        let bytes: [UInt8] =
            switch kind {
            case "random": (0..<5000).map { _ in UInt8.random(in: 0...255, using: &rng) }
            case "text": Array(String(repeating: "Lorem ipsum dolor sit amet, consectetur adipiscing elit.\n", count: 40).utf8)
            case "short text": Array("hello world\n".utf8)
            default: []
            }
        for slice in [Int.max, 1] {
            let error = try #require(tarError { _ = try parse(bytes, sliceSize: { _ in slice }) })
            #expect(error.code == .notATarStream, "\(kind): \(error)")
            #expect(error.offset == 0)
            #expect(error.message.hasPrefix("not a tar stream: "), "\(error)")
        }
    }

    @Test func notATarStreamMessages() throws {
        #expect(
            tarError { _ = try parse(Array(repeating: UInt8(ascii: "x"), count: 600)) }?.description
                == "tar header at offset 0: not a tar stream: the first header block at offset 0 has no valid checksum and no ustar magic")
        #expect(
            tarError { _ = try parse(Array("hello world\n".utf8)) }?.message
                == "not a tar stream: it ends after 12 bytes, inside the first 512-byte header block, which has no ustar magic")
        #expect(tarError { _ = try parse([]) }?.message == "not a tar stream: it is empty")
    }

    /// Damage is still damage: a first header that keeps its magic, a later header, or a cut
    /// inside a first block that has its magic are reported as before.
    @Test func damagedTarIsNotMistakenForNonTar() throws {
        let (original, _) = try Self.sampleArchive()
        var first = original
        first[3] ^= 0x01
        #expect(tarError { _ = try parse(first) }?.code == .badChecksum)
        var later = original
        let second = try #require(members(try parse(original)).dropFirst().first)
        for index in Int(second.headerOffset)..<Int(second.headerOffset + 512) { later[index] = UInt8(ascii: "x") }
        let error = try #require(tarError { _ = try parse(later) })
        #expect(error.code == .badChecksum && error.offset == second.headerOffset)
        #expect(tarError { _ = try parse(Array(original.prefix(300)), requireEndMarker: false) }?.code == .truncated)
        // A v7 header has no magic but a valid checksum: still a tar stream.
        #expect(members(try parse(RawBlock(name: "old", magic: .v7).bytes + TarEncoder.endOfArchive)).count == 1)
    }

    // MARK: Global headers

    /// Each global header's event carries its own records only, and its defaults replace the
    /// previous ones: nothing the parser keeps grows with the number of global headers.
    @Test func globalHeadersReplaceRatherThanAccumulate() throws {
        var bytes: [UInt8] = []
        for index in 0..<2000 {
            bytes += extendedHeader("g", paxRecord("uname", "user\(index)") + paxRecord("AMK.k\(index)", String(index)))
        }
        bytes +=
            RawBlock(name: "a").bytes + extendedHeader("g", paxRecord("uname", "")) + RawBlock(name: "b").bytes + TarEncoder.endOfArchive
        let events = try parse(bytes, sliceSize: { rng in Int.random(in: 1...3000, using: &rng) })
        var globals = 0
        for event in events {
            if case .global(let records, let offset) = event {
                #expect(records.count <= 2, "event \(globals) carries \(records.count) records")
                if globals < 2000 {
                    #expect(records == ["uname=user\(globals)", "AMK.k\(globals)=\(globals)"] && offset == UInt64(globals * 1024))
                }
                globals += 1
            }
        }
        #expect(globals == 2001)
        // Reported, not applied (`globalOwnersAndTimesAreNotAppliedAndXOverrides`).
        #expect(members(events).map(\.header.userName) == [nil, nil])
    }
}
