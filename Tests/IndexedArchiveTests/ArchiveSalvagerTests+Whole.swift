import Foundation
import IndexedArchive
import Tar
import TestSupport
import Testing
import XZ

extension EngineSuites.ArchiveSalvagerTests {
    /// "Whole" means every member came back, not only that every xz block verified: found by an
    /// attacker's archives, each of which salvaged with "no damage found" and exit status 0 while
    /// members were missing.

    /// A hard link whose target the archive does not hold before it (here, after it) cannot be
    /// made. Extraction refuses it; salvage skips it, and must report it lost.
    @Test(.enabled(if: toolExists("xz")), arguments: ReadMode.allCases)
    func aHardLinkWithoutItsTargetIsLost(mode: ReadMode) async throws {
        let dir = try TemporaryDirectory()
        let tar = try tarStream([tarHardLink("h", to: "f"), tarFile("f", "data")])
        let archive = dir.path + "/a.tar.xz"
        _ = try await hostileArchive(tar, mode: mode, at: archive)
        let report = try await ArchiveSalvager.salvage(path: archive, to: dir.path + "/out")
        #expect(report.damage == nil, "\(report.damage ?? "")")
        #expect(report.recovered == ["f"])
        #expect(report.lost == ["h"])
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/out/h"))
    }

    /// Every block verifies, but the tar stream holds a member the amk index does not list
    /// (after its last entry, or between two), which `list` hides and `extract` and `verify`
    /// refuse: salvage reported "no damage" with status 0 and wrote the hidden member. It is
    /// damage now, named, and the member is not written; an index listing more members than the
    /// stream holds is damage too.
    @Test(.enabled(if: toolExists("xz")), arguments: ["end", "between", "missing"])
    func membersAreHeldToTheIndex(variant: String) async throws {
        let dir = try TemporaryDirectory()
        let (a, b, hidden) = (tarFile("a.txt", "alpha"), tarFile("b.txt", "beta"), tarFile("hidden.txt", "gotcha"))
        let (tar, described): ([UInt8], [UInt8])
        switch variant {
        case "end": (tar, described) = (try tarStream([a, b, hidden]), try tarStream([a, b]))
        case "between": (tar, described) = (try tarStream([a, hidden, b]), try tarStream([a, b]))
        default: (tar, described) = (try tarStream([a]), try tarStream([a, b]))
        }
        let archive = dir.path + "/a.tar.xz"
        try await writeBytes(archive, try indexedArchive(tar: tar, describing: described))
        let report = try await ArchiveSalvager.salvage(path: archive, to: dir.path + "/out")
        let damage = try #require(report.damage, "\(variant): salvaged as whole")
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/out/hidden.txt"), "\(variant)")
        #expect(report.recovered.first == "a.txt", "\(variant)")
        if variant == "missing" {
            #expect(damage.contains("lists 2 members but the tar stream has 1"), "\(damage)")
        } else {
            // Between two entries the hidden member stands where the index has the next one.
            let says = variant == "end" ? "not in the index" : "the header names \"hidden.txt\", the index \"b.txt\""
            #expect(damage.contains(says), "\(variant): \(damage)")
        }
    }

    /// An index the archive cannot be opened with (here its tar size is 512 bytes off; so too a
    /// section cut short, an entry out of order) while every block and member is sound: salvage
    /// said "no damage found", status 0, for an archive `verify` and `extract` refuse. It is
    /// damage, named, and nothing is lost: the tar stream was read to its end.
    @Test(arguments: ["tar size", "sound"]) func anIndexThatCannotBeUsedIsDamage(variant: String) async throws {
        let dir = try TemporaryDirectory()
        let tar = try tarStream([tarFile("a.txt", "alpha"), tarFile("b.txt", "beta")])
        let archive = dir.path + "/a.tar.xz"
        try await writeBytes(archive, try indexedArchive(tar: tar) { if variant == "tar size" { $0.tarSize += 512 } })
        let report = try await ArchiveSalvager.salvage(path: archive, to: dir.path + "/out")
        #expect(report.recovered == ["a.txt", "b.txt"])
        #expect(report.lost.isEmpty && report.lostIsComplete)
        #expect(try await readBytes(dir.path + "/out/b.txt") == Array("beta".utf8))
        if variant == "sound" {
            #expect(report.damage == nil)
        } else {
            let damage = try #require(report.damage, "salvaged as whole")
            #expect(damage.contains("index cannot be used") && damage.contains("tar"), "\(damage)")
            let opened = await #expect(throws: ArchiveError.self) { try await ArchiveReader.open(path: archive) }
            #expect(report.damageOffset == opened?.offset, "where opening the archive found it")
        }
    }

    /// With a block whose check fails and a readable index, the damage reported is that check,
    /// in that block: once the walk reached the xz Index it compared it with the blocks walked
    /// (the damaged one missing) and reported a mismatch of the Index at another offset instead.
    @Test(.enabled(if: toolExists("xz")))
    func theFirstDamageIsTheOneReported() async throws {
        let c = try await EngineSuites.ArchiveSalvagerTests.Case.make()
        let block = c.blocks[1]
        var bytes = c.bytes
        // The last byte of the block is its CRC64's.
        bytes[Int(block.compressedOffset + block.totalSize - 1)] ^= 0x01
        let path = c.packed.dir.path + "/check.tar.xz"
        try await writeBytes(path, bytes)
        let report = try await ArchiveSalvager.salvage(path: path, to: c.packed.dir.path + "/out")
        let damage = try #require(report.damage)
        #expect(damage.contains("check") && !damage.contains("Index"), "\(damage)")
        #expect(
            report.damageOffset.map { $0 >= block.compressedOffset && $0 < block.compressedOffset + block.totalSize } == true,
            "damage at \(String(describing: report.damageOffset)), block at \(block.compressedOffset)")
        #expect(report.damagedBlocks == 1)
    }

    /// Every block verifies, but the tar stream inside stops 3,000 bytes into a 100,000-byte
    /// member (the tar was cut before it was compressed, or its size field lies): damage, naming
    /// the member, which is lost; the member before it is recovered.
    @Test(.enabled(if: toolExists("xz")))
    func aTarStreamCutInsideAMemberIsDamage() async throws {
        let dir = try TemporaryDirectory()
        let big = String(repeating: "b", count: 100_000)
        let whole = try tarStream([tarFile("a.txt", "a"), tarFile("big.bin", big)])
        let cut = Array(whole.prefix(512 + 512 + 512 + 3000))
        let archive = dir.path + "/cut.tar.xz"
        try await writeBytes(archive, try await xzTool(cut))
        let report = try await ArchiveSalvager.salvage(path: archive, to: dir.path + "/out")
        #expect(report.damage?.contains("ends inside member 'big.bin'") == true, "\(report.damage ?? "nil")")
        #expect(report.damageOffset != nil)
        #expect(report.recovered == ["a.txt"])
        #expect(report.lost == ["big.bin"])
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/out/big.bin"))
    }

    /// Every block verifies, but the tar stream stops between two members, without its
    /// end-of-archive marker: what followed is unknown, as `verify` says (salvage called it whole).
    @Test(.enabled(if: toolExists("xz")))
    func aTarStreamWithoutItsEndMarkerIsDamage() async throws {
        let dir = try TemporaryDirectory()
        let tar = try tarStream([tarFile("a.txt", "a"), tarFile("b.txt", "b")], end: false)
        let archive = dir.path + "/noend.tar.xz"
        try await writeBytes(archive, try await xzTool(tar))
        let report = try await ArchiveSalvager.salvage(path: archive, to: dir.path + "/out")
        #expect(report.damage == "the tar stream ends without its end-of-archive marker", "\(report.damage ?? "nil")")
        #expect(report.recovered == ["a.txt", "b.txt"])
        #expect(!report.lostIsComplete)
    }

    /// Two xz streams, the tar stream split between them: what lies between the streams must be
    /// stream padding (zero bytes in fours) and then a Stream Header. Three bytes of padding, or a
    /// damaged header, is damage at that offset; the last stream's footer being whole does not make
    /// the archive whole. Four bytes of padding is whole.
    @Test(.enabled(if: toolExists("xz")), arguments: ["padding 4", "padding 3", "header"])
    func damageBetweenStreamsIsReported(variant: String) async throws {
        let dir = try TemporaryDirectory()
        let tar = try tarStream([tarFile("d/a", String(repeating: "a", count: 5000)), tarFile("d/b", "b"), tarFile("d/c", "c")])
        let first = try await xzTool(Array(tar.prefix(2048)))
        var second = try await xzTool(Array(tar.dropFirst(2048)))
        var between: [UInt8] = []
        switch variant {
        case "padding 4": between = [0, 0, 0, 0]
        case "padding 3": between = [0, 0, 0]
        default: second[8] ^= 0x01  // the Stream Header's CRC32
        }
        let archive = dir.path + "/multi.tar.xz"
        try await writeBytes(archive, first + between + second)
        let report = try await ArchiveSalvager.salvage(path: archive, to: dir.path + "/out")
        if variant == "padding 4" {
            #expect(report.damage == nil, "\(report.damage ?? "")")
            #expect(report.recovered == ["d/a", "d/b", "d/c"])
            #expect(report.lost.isEmpty)
        } else {
            #expect(report.damageOffset == UInt64(first.count), "\(report.damage ?? "nil")")
            #expect(report.recovered.isEmpty)
            #expect(report.lost == ["d/a"], "the member the first stream ends inside")
        }
    }

    /// A member the extraction refuses ('..') stops the salvage as a limit does, naming the member;
    /// it is not damage to the bytes.
    @Test(.enabled(if: toolExists("xz")))
    func aRefusedMemberStopsTheSalvageByName() async throws {
        let dir = try TemporaryDirectory()
        let tar = try tarStream([tarFile("a.txt", "a"), tarFile("../evil", "e"), tarFile("b.txt", "b")])
        let archive = dir.path + "/u.tar.xz"
        try await writeBytes(archive, try await xzTool(tar))
        let report = try await ArchiveSalvager.salvage(path: archive, to: dir.path + "/out")
        #expect(report.damage == nil, "\(report.damage ?? "")")
        #expect(report.stop?.contains("member '../evil'") == true, "\(report.stop ?? "nil")")
        #expect(report.recovered == ["a.txt"])
        #expect(report.lost == ["../evil"])
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/evil"))
    }

    /// The walk needs no xz Index, but when it reaches one whole it still checks it: a flipped bit
    /// in its CRC32, or a record whose size disagrees with the block (CRC32 made to match), is
    /// refused by `xz -d`, `pixz` and `verify`; salvage said "no damage" (every member recovered).
    @Test(.enabled(if: toolExists("xz")), arguments: ["untouched", "crc32", "record"])
    func theXZIndexIsCheckedOnceReached(variant: String) async throws {
        let dir = try TemporaryDirectory()
        let tar = try tarStream([tarFile("a.txt", String(repeating: "a", count: 3000)), tarFile("b.txt", "b")])
        var xz = try await xzTool(tar)
        let footer = xz.count - StreamFooter.size
        let indexSize = try xz[footer...].withUnsafeBytes { try StreamFooter.decode($0, fileOffset: UInt64(footer)).indexSize }
        let index = footer - Int(indexSize)
        let crc = footer - 4
        switch variant {
        case "crc32":
            xz[crc] ^= 0x01
        case "record":
            // Indicator, one record (one-byte count), its unpadded size (a VLI), then its
            // uncompressed size, whose low bits are changed without changing its length.
            #expect(xz[index] == 0 && xz[index + 1] == 1)
            var at = index + 2
            while xz[at] & 0x80 != 0 { at += 1 }
            at += 1
            xz[at] ^= 0x01
            let sum = xz[index..<crc].withUnsafeBytes { CRC.crc32($0) }
            withUnsafeBytes(of: sum.littleEndian) { xz.replaceSubrange(crc..<crc + 4, with: $0) }
        default:
            break
        }
        let archive = dir.path + "/i.tar.xz"
        try await writeBytes(archive, xz)
        let report = try await ArchiveSalvager.salvage(path: archive, to: dir.path + "/out")
        #expect(report.recovered == ["a.txt", "b.txt"], "the blocks are sound: every member comes back")
        if variant == "untouched" {
            #expect(report.damage == nil, "\(report.damage ?? "")")
        } else {
            #expect(report.damage?.contains("xz Index") == true, "\(report.damage ?? "nil")")
            #expect(report.damageOffset != nil)
        }
    }
}
