import Foundation
import Tar
import TestSupport
import Testing

/// Sparse members in each form GNU tar and bsdtar write them, built here byte by byte from the
/// GNU tar manual's description (not by our encoder, which writes none), and maps that lie.
struct SparseMapTests {
    /// Runs of a file: where each starts and what it holds.
    typealias Runs = [(offset: UInt64, bytes: [UInt8])]

    /// The file `runs` describe: zeros, with each run's bytes in place.
    static func expand(_ runs: Runs, realSize: Int) -> [UInt8] {
        var file = [UInt8](repeating: 0, count: realSize)
        for run in runs { file.replaceSubrange(Int(run.offset)..<(Int(run.offset) + run.bytes.count), with: run.bytes) }
        return file
    }

    static func octal12(_ value: UInt64) -> [UInt8] {
        let digits = String(value, radix: 8)
        return Array((String(repeating: "0", count: 11 - digits.count) + digits).utf8) + [0]
    }

    /// An old GNU sparse member (typeflag `S`): four map entries in the header, 21 in each
    /// extension block.
    static func oldGNU(_ name: String, realSize: UInt64, runs: [(offset: UInt64, size: UInt64)], stored: [UInt8]) -> [UInt8] {
        var header = RawBlock(name: name, typeflag: UInt8(ascii: "S"), size: UInt64(stored.count), magic: .gnu)
        for (index, run) in runs.prefix(4).enumerated() {
            header.setBytes(386 + index * 24, octal12(run.offset) + octal12(run.size))
        }
        header.bytes[482] = runs.count > 4 ? 1 : 0
        header.setBytes(483, octal12(realSize))
        header.sealChecksum()
        var out = header.bytes
        var rest = Array(runs.dropFirst(4))
        while !rest.isEmpty {
            var block = [UInt8](repeating: 0, count: 512)
            for (index, run) in rest.prefix(21).enumerated() {
                block.replaceSubrange((index * 24)..<(index * 24 + 24), with: octal12(run.offset) + octal12(run.size))
            }
            rest = Array(rest.dropFirst(21))
            block[504] = rest.isEmpty ? 0 : 1
            out += block
        }
        return out + padded(stored)
    }

    /// A member with a pax header of `records` and `content` stored under the ustar name `name`.
    static func pax(_ records: [(String, String)], name: String, content: [UInt8]) -> [UInt8] {
        let data = records.flatMap { paxRecord($0.0, $0.1) }
        return RawBlock(name: "PaxHeaders/x", typeflag: UInt8(ascii: "x"), size: UInt64(data.count)).bytes + padded(data)
            + RawBlock(name: name, size: UInt64(content.count)).bytes + padded(content)
    }

    /// A pax 1.0 map as GNU tar writes it at the head of the content: count, then offset and size
    /// lines, padded with NULs to a block.
    static func map10(_ runs: [(offset: UInt64, size: UInt64)]) -> [UInt8] {
        var text = "\(runs.count)\n"
        for run in runs { text += "\(run.offset)\n\(run.size)\n" }
        return padded(Array(text.utf8))
    }

    /// A file of `count` runs of distinct bytes, spread over holes, ending in a hole.
    static func sample(count: Int) -> (runs: Runs, realSize: Int) {
        var runs: Runs = []
        for index in 0..<count {
            let bytes = [UInt8](repeating: UInt8(65 + index % 26), count: 100 + index * 7)
            runs.append((UInt64(1000 + index * 3000), bytes))
        }
        return (runs, 1000 + count * 3000 + 500)
    }

    /// The archive of each form for `runs`, ending with a plain member.
    static func forms(_ runs: Runs, realSize: Int) -> [(String, [UInt8])] {
        let map = runs.map { (offset: $0.offset, size: UInt64($0.bytes.count)) }
        let stored = runs.flatMap(\.bytes)
        let tail = RawBlock(name: "after", size: 2).bytes + padded([1, 2]) + TarEncoder.endOfArchive
        let list = map.map { "\($0.offset),\($0.size)" }.joined(separator: ",")
        var pax00: [(String, String)] = [("GNU.sparse.size", "\(realSize)"), ("GNU.sparse.numblocks", "\(map.count)")]
        for run in map { pax00 += [("GNU.sparse.offset", "\(run.offset)"), ("GNU.sparse.numbytes", "\(run.size)")] }
        return [
            ("old GNU", oldGNU("dir/file", realSize: UInt64(realSize), runs: map, stored: stored) + tail),
            ("pax 0.0", pax(pax00 + [("path", "dir/file")], name: "GNUSparseFile.0/file", content: stored) + tail),
            (
                "pax 0.1",
                pax(
                    [
                        ("GNU.sparse.size", "\(realSize)"), ("GNU.sparse.numblocks", "\(map.count)"), ("GNU.sparse.map", list),
                        ("GNU.sparse.name", "dir/file")
                    ], name: "GNUSparseFile.0/file", content: stored) + tail
            ),
            (
                "pax 1.0",
                pax(
                    [
                        ("GNU.sparse.major", "1"), ("GNU.sparse.minor", "0"), ("GNU.sparse.name", "dir/file"),
                        ("GNU.sparse.realsize", "\(realSize)")
                    ], name: "./GNUSparseFile.0/file", content: map10(map) + stored) + tail
            )
        ]
    }

    @Test(arguments: [1, 3, 4, 5, 25, 26, 70])
    func everyFormReadsAsTheFileItStandsFor(runCount: Int) throws {
        let (runs, realSize) = Self.sample(count: runCount)
        let expected = Self.expand(runs, realSize: realSize)
        for (form, tar) in Self.forms(runs, realSize: realSize) {
            for seed: UInt64 in [1, 2] {
                let events = try parse(tar, sliceSize: { seed == 1 ? Int.max : Int.random(in: 1...700, using: &$0) }, seed: seed)
                let found = members(events)
                #expect(found.map(\.header.path) == ["dir/file", "after"], "\(form)")
                #expect(found.first?.isSparse == true && found.last?.isSparse == false, "\(form)")
                #expect(found.first?.header.size == UInt64(realSize) && found.first?.header.kind == .regular, "\(form)")
                #expect(contents(events)["dir/file"] == expected, "\(form), \(runCount) runs")
                #expect(contents(events)["after"] == [1, 2], "\(form)")
                // The holes are handed on as holes: the stored bytes alone are data.
                let holes = events.reduce(UInt64(0)) { if case .hole(let length) = $1 { $0 + length } else { $0 } }
                #expect(holes == UInt64(realSize - runs.reduce(0) { $0 + $1.bytes.count }), "\(form)")
                // Content starts after every header and map block: the first run's bytes are there.
                let first = try #require(found.first)
                #expect(Array(tar[Int(first.dataOffset)..<(Int(first.dataOffset) + runs[0].bytes.count)]) == runs[0].bytes, "\(form)")
            }
        }
    }

    /// A file that is all hole stores nothing, and one whose data reaches its end has no hole
    /// after it.
    @Test func filesOfOnlyHoleOrEndingInDataRead() throws {
        let hole = Self.oldGNU("hole", realSize: 4096, runs: [(4096, 0)], stored: []) + TarEncoder.endOfArchive
        #expect(contents(try parse(hole))["hole"] == [UInt8](repeating: 0, count: 4096))
        let empty10 =
            Self.pax(
                [("GNU.sparse.major", "1"), ("GNU.sparse.minor", "0"), ("GNU.sparse.realsize", "70000")], name: "z",
                content: Self.map10([(70000, 0)])) + TarEncoder.endOfArchive
        #expect(contents(try parse(empty10))["z"] == [UInt8](repeating: 0, count: 70000))
        let full =
            Self.pax(
                [("GNU.sparse.size", "6"), ("GNU.sparse.map", "2,4")], name: "f", content: [9, 8, 7, 6]) + TarEncoder.endOfArchive
        let events = try parse(full)
        #expect(contents(events)["f"] == [0, 0, 9, 8, 7, 6])
        #expect(events.contains { if case .hole(2) = $0 { true } else { false } })
        #expect(!events.contains { if case .hole(let length) = $0 { length != 2 } else { false } })
    }

    /// Each map that lies is refused before the member is announced, naming the member's first
    /// header block, whatever the form it comes in.
    @Test func mapsThatLieAreRefused() throws {
        let stored = [UInt8](repeating: 7, count: 100)
        func pax01(_ map: String, size: String = "10000", stored: [UInt8] = stored) -> [UInt8] {
            Self.pax([("GNU.sparse.size", size), ("GNU.sparse.map", map)], name: "m", content: stored) + TarEncoder.endOfArchive
        }
        func pax10(_ text: String, realSize: String = "10000", stored: [UInt8] = stored) -> [UInt8] {
            Self.pax(
                [("GNU.sparse.major", "1"), ("GNU.sparse.minor", "0"), ("GNU.sparse.realsize", realSize)], name: "m",
                content: padded(Array(text.utf8)) + stored) + TarEncoder.endOfArchive
        }
        let cases: [(String, [UInt8], TarError.Code, String)] = [
            ("overlap", pax01("0,60,50,40"), .badField, "run 1 starts at 50, before the end of the run before it (60)"),
            ("out of order", pax01("500,50,0,50"), .badField, "before the end of the run before it"),
            ("past the size", pax01("9950,100"), .badField, "ends past the file's size of 10000 bytes"),
            ("overflow", pax01("18446744073709551615,100", size: "18446744073709551615"), .badField, "ends past the file's size"),
            ("too few stored", pax01("0,50"), .badField, "its runs hold 50 bytes, the member stores 100"),
            ("too many stored", pax01("0,50,100,80"), .badField, "its runs hold 130 bytes, the member stores 100"),
            ("odd list", pax01("0,50,100"), .badPaxRecord, "an odd count of numbers (3)"),
            ("not numbers", pax01("0,x"), .badPaxRecord, "entry 0 is not two decimal numbers"),
            ("no size", Self.pax([("GNU.sparse.map", "0,100")], name: "m", content: stored), .badField, "no real size"),
            ("no map", Self.pax([("GNU.sparse.size", "100")], name: "m", content: stored), .badField, "no map"),
            (
                "numblocks",
                Self.pax(
                    [("GNU.sparse.size", "100"), ("GNU.sparse.numblocks", "2"), ("GNU.sparse.map", "0,100")], name: "m", content: stored),
                .badField, "GNU.sparse.numblocks says 2 runs, the map lists 1"
            ),
            (
                "numbytes first", Self.pax([("GNU.sparse.size", "100"), ("GNU.sparse.numbytes", "100")], name: "m", content: stored),
                .badPaxRecord, "has no GNU.sparse.offset before it"
            ),
            (
                "offset twice",
                Self.pax([("GNU.sparse.size", "100"), ("GNU.sparse.offset", "0"), ("GNU.sparse.offset", "5")], name: "m", content: stored),
                .badPaxRecord, "follows another GNU.sparse.offset"
            ),
            (
                "offset alone", Self.pax([("GNU.sparse.size", "100"), ("GNU.sparse.offset", "0")], name: "m", content: stored),
                .badField, "a GNU.sparse.offset without its GNU.sparse.numbytes"
            ),
            ("1.0 letters", pax10("1\n0\nten\n"), .badField, "where a digit or a newline belongs"),
            ("1.0 empty line", pax10("1\n\n100\n"), .badField, "an empty line where a number belongs"),
            ("1.0 huge number", pax10("1\n0\n99999999999999999999999\n"), .badField, "a number past 2^64"),
            ("1.0 sum", pax10("1\n0\n99\n"), .badField, "its runs hold 99 bytes, the member stores 100"),
            (
                "1.0 map past content", pax10("1\n0\n" + String(repeating: "0", count: 508), stored: []), .badField,
                "sparse map runs past the 512 bytes"
            ),
            (
                "1.0 no content",
                Self.pax([("GNU.sparse.major", "1"), ("GNU.sparse.minor", "0"), ("GNU.sparse.realsize", "5")], name: "m", content: []),
                .badField, "the member stores none"
            ),
            (
                "version 2",
                Self.pax([("GNU.sparse.major", "2"), ("GNU.sparse.minor", "0"), ("GNU.sparse.realsize", "5")], name: "m", content: stored),
                .unsupported, "unsupported: sparse format 2.0"
            ),
            (
                "unknown keyword", Self.pax([("GNU.sparse.frobnicate", "1")], name: "m", content: stored), .unsupported,
                "unsupported: pax keyword \"GNU.sparse.frobnicate\""
            ),
            (
                "directory",
                Self.pax([("GNU.sparse.size", "100"), ("GNU.sparse.map", "0,100"), ("GNU.sparse.name", "d/")], name: "m", content: stored),
                .badField, "not a regular file"
            ),
            (
                "both forms",
                Self.pax([("GNU.sparse.size", "100"), ("GNU.sparse.map", "0,100")], name: "x", content: [])
                    .dropLast(512) + Self.oldGNU("m", realSize: 100, runs: [(0, 100)], stored: stored),
                .badField, "both an old GNU sparse header and GNU.sparse pax records"
            ),
            (
                "old GNU sum", Self.oldGNU("m", realSize: 10000, runs: [(0, 10), (20, 10)], stored: stored), .badField,
                "its runs hold 20 bytes"
            )
        ]
        for (what, tar, code, message) in cases {
            var announced = false
            let error = tarError {
                var parser = TarParser()
                try tar.withUnsafeBytes { raw in try parser.consume(raw) { if case .member = $0 { announced = true } } }
                try parser.finish()
            }
            #expect(error?.code == code, "\(what): \(error.map { "\($0)" } ?? "no error")")
            #expect(error?.message.contains(message) == true, "\(what): \(error?.message ?? "")")
            #expect(error?.offset == 0, "\(what): the member's first header block")
            #expect(!announced, "\(what): announced before its map was checked")
        }
    }

    /// Names hide no NUL and stay within the limit; maps stay within theirs in every form; a map
    /// in a global header is refused; a stream that ends inside a map is truncated there.
    @Test func namesLimitsAndTruncation() throws {
        let stored = [UInt8](repeating: 7, count: 100)
        let nul = paxRecord(Array("GNU.sparse.name".utf8), Array("ok\0../../etc/x".utf8))
        let nulTar =
            RawBlock(name: "PaxHeaders/x", typeflag: UInt8(ascii: "x"), size: UInt64(nul.count)).bytes + padded(nul)
            + RawBlock(name: "m", size: 100).bytes + padded(stored) + TarEncoder.endOfArchive
        let nulError = try #require(tarError { _ = try parse(nulTar) })
        #expect(nulError.code == .badPaxRecord && nulError.message.contains("NUL byte at byte 2"))
        let long =
            Self.pax(
                [("GNU.sparse.size", "100"), ("GNU.sparse.map", "0,100"), ("GNU.sparse.name", String(repeating: "n", count: 300))],
                name: "m",
                content: stored) + TarEncoder.endOfArchive
        #expect(tarError { _ = try parse(long, limits: .init(maxPathLength: 299)) }?.code == .tooLarge)
        #expect(members(try parse(long)).first?.header.path.utf8.count == 300)

        let (runs, realSize) = Self.sample(count: 30)
        for (form, tar) in Self.forms(runs, realSize: realSize) {
            let error = tarError { _ = try parse(tar, limits: .init(maxSparseRuns: 29)) }
            #expect(error?.code == .tooLarge && error?.message.contains("29") == true, "\(form): \(error.map { "\($0)" } ?? "")")
            #expect(members(try parse(tar, limits: .init(maxSparseRuns: 30))).count == 2, "\(form)")
        }
        #expect(TarParser.Limits().maxSparseRuns == 1 << 20)

        let global = paxRecord("GNU.sparse.map", "0,1")
        let globalTar =
            RawBlock(name: "g", typeflag: UInt8(ascii: "g"), size: UInt64(global.count)).bytes + padded(global) + TarEncoder.endOfArchive
        #expect(tarError { _ = try parse(globalTar) }?.message.contains("in a global header") == true)

        // Cut inside the old GNU extension blocks, and inside a 1.0 map.
        let forms = Self.forms(runs, realSize: realSize)
        let oldGNU = forms[0].1
        let cut = try #require(tarError { _ = try parse(Array(oldGNU.prefix(512 + 100))) })
        #expect(cut.code == .truncated && cut.offset == 0 && cut.message.contains("sparse map"))
        let pax10 = forms[3].1
        let cut10 = try #require(tarError { _ = try parse(Array(pax10.prefix(512 * 3 + 10))) })
        #expect(cut10.code == .truncated && cut10.offset == 0, "\(cut10)")
        // Cut inside the stored runs: the member's content is named as truncated.
        let cutData = try #require(tarError { _ = try parse(Array(oldGNU.prefix(512 * 3 + 50))) })
        #expect(cutData.code == .truncated && cutData.message.contains("dir/file"), "\(cutData)")
    }

    // MARK: - The writers

    /// A sparse file as GNU tar (old GNU and pax 0.0, 0.1, 1.0) and bsdtar archive it reads back
    /// as the file, with every hole.
    @Test(.enabled(if: ChildProcess.lookUp("tar") != nil, "GNU tar is not installed"))
    func gnuTarsFormsReadBack() throws {
        let scratch = try TemporaryDirectory(prefix: "sparse-gnu")
        let (file, expected) = try Self.writeSparseFile(in: scratch)
        for arguments in [
            ["--format=gnu"], ["--format=pax", "--sparse-version=0.0"], ["--format=pax", "--sparse-version=0.1"],
            ["--format=pax", "--sparse-version=1.0"]
        ] {
            let archive = scratch.url("gnu.tar").path
            let result = try ChildProcess.run("tar", ["--sparse"] + arguments + ["-cf", archive, "-C", scratch.path, file])
            try #require(result.status == 0, "\(arguments): \(result.stderr)")
            let tar = Array(try Data(contentsOf: URL(filePath: archive)))
            #expect(tar.count < expected.count / 4, "\(arguments): GNU tar stored the holes")
            let events = try parse(tar, sliceSize: { Int.random(in: 1...5000, using: &$0) })
            #expect(members(events).first?.isSparse == true, "\(arguments)")
            #expect(contents(events)[file] == expected, "\(arguments)")
        }
    }

    @Test(.enabled(if: ChildProcess.lookUp("bsdtar") != nil, "bsdtar (libarchive-tools) is not installed"))
    func bsdtarsFormReadsBack() throws {
        let scratch = try TemporaryDirectory(prefix: "sparse-bsd")
        let (file, expected) = try Self.writeSparseFile(in: scratch)
        let archive = scratch.url("bsd.tar").path
        let result = try ChildProcess.run("bsdtar", ["-cf", archive, "-C", scratch.path, file])
        try #require(result.status == 0, "\(result.stderr)")
        let tar = Array(try Data(contentsOf: URL(filePath: archive)))
        let events = try parse(tar, sliceSize: { Int.random(in: 1...5000, using: &$0) })
        try #require(members(events).first?.isSparse == true, "bsdtar stored the file whole: the file system made no holes")
        #expect(contents(events)[file] == expected)
    }

    /// A file with 40 runs of data among holes (more than the old GNU header and one extension
    /// block hold), and a hole at the end.
    static func writeSparseFile(in scratch: TemporaryDirectory) throws -> (name: String, content: [UInt8]) {
        var runs: Runs = []
        for index in 0..<40 {
            runs.append((UInt64(index) * 65536 + UInt64(index % 5) * 512, [UInt8](repeating: UInt8(97 + index % 26), count: 700 + index)))
        }
        let realSize = 40 * 65536 + 4096
        let url = scratch.url("sparse.img")
        try Data().write(to: url)
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        for run in runs {
            try handle.seek(toOffset: run.offset)
            try handle.write(contentsOf: Data(run.bytes))
        }
        try handle.truncate(atOffset: UInt64(realSize))
        return ("sparse.img", Self.expand(runs, realSize: realSize))
    }
}
