import ArchiveTestSupport
import Foundation
import IndexedArchive
import Tar
import TestSupport
import Testing
import XZ

@testable import amk

extension AMKTests {
    /// Issue #10, points 3 and 4: small archives that declare huge things. Every layer below the
    /// lie is consistent (block checks, xz Index, AMKINDEX, pixz index). Each command runs as a
    /// child process whose peak resident set size the kernel measures; it must end in success or
    /// a typed error, never a crash, and stay well under 100 MiB.
    @Suite(.enabled(if: FileManager.default.isExecutableFile(atPath: AMKProcess.timeTool), "needs /usr/bin/time"))
    @MainActor struct Amplification {
        /// Peak RSS allowed to one command, in KiB.
        static let bound = 100 << 10
        let tree: TestTree

        init() throws {
            tree = try TestTree()
        }

        /// Runs `amk arguments`, expects `status` and a peak RSS under ``bound``.
        @discardableResult
        func run(
            _ arguments: [String], piping: String? = nil, status: Int32, sourceLocation: SourceLocation = #_sourceLocation
        ) throws -> AMKProcess.Result {
            let (result, peak) = try AMKProcess.runMeasured(arguments, piping: piping)
            let command =
                "amk " + arguments.map { $0.hasPrefix("/") ? URL(fileURLWithPath: $0).lastPathComponent : $0 }.joined(separator: " ")
            print("\(command): exit \(result.status), peak RSS \(peak / 1024) MiB")
            #expect(result.status == status, "\(command): \(result.stderr)", sourceLocation: sourceLocation)
            #expect(peak < Self.bound, "\(command) peaked at \(peak / 1024) MiB", sourceLocation: sourceLocation)
            if status != 0 {
                // One line, and for an extraction that damage stopped, the advice to salvage.
                let lines = result.stderr.split(separator: "\n")
                let advice =
                    lines.count == 2 && arguments.first == "extract" && lines[1].hasPrefix("amk: the archive is damaged: 'amk salvage ")
                #expect(
                    result.stderr.hasPrefix("amk: ") && (lines.count == 1 || advice),
                    "\(command): a typed error on one line: \(result.stderr)", sourceLocation: sourceLocation)
            }
            return result
        }

        static let mtime = TarTimestamp(seconds: 1_700_000_000)

        static func header(_ name: String, size: Int) throws -> [UInt8] {
            try TarEncoder.encode(TarHeader(path: name, kind: .regular, size: UInt64(size), mode: 0o644, mtime: mtime))
        }

        static func entry(_ name: String, size: Int, at headerOffset: Int, checksum: UInt64) -> ArchiveEntry {
            ArchiveEntry(
                path: name, kind: .regular, size: UInt64(size), mode: 0o644, uid: 0, gid: 0, mtime: mtime,
                linkTarget: nil, headerOffset: UInt64(headerOffset), dataOffset: UInt64(headerOffset + 512),
                checksum: checksum, hasPaxHeader: false)
        }

        /// `small.txt` and the end marker: 2048 bytes of tar.
        static func smallTar() throws -> [UInt8] {
            let content = Array("small".utf8)
            return try header("small.txt", size: content.count) + content
                + [UInt8](repeating: 0, count: TarEncoder.padding(forContentSize: UInt64(content.count))) + TarEncoder.endOfArchive
        }

        static let smallEntry = entry("small.txt", size: 5, at: 0, checksum: CRC.crc64(Array("small".utf8)))

        static let gibibyte = 1 << 30

        func write(_ name: String, _ bytes: [UInt8]) throws -> String {
            let path = tree.path(name)
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            return path
        }

        @Test func aGibibyteOfZerosAfterTheTarIsStreamedThrough() throws {
            // A 150 KB archive: small.txt, the end marker, then a block of 1 GiB of zeros that
            // the tar stream includes (tar readers skip what follows the end marker). Verifying,
            // extracting and salvaging decode it all.
            let tar = try Self.smallTar()
            let zeros = try Craft.zeroBlock(chunks: Self.gibibyte / Craft.zeroChunkSize)
            let tarSize = UInt64(tar.count + Self.gibibyte)
            let archive = try write(
                "zeros.tar.xz",
                try Craft.archive(
                    dataBlocks: [try Craft.block(tar), zeros],
                    entries: [Self.smallEntry], tarSize: tarSize))
            let size = try FileManager.default.attributesOfItem(atPath: archive)[.size] as? Int ?? 0
            #expect(size < 400_000, "\(size) bytes")

            #expect(try run(["info", archive], status: 0).stdout.contains("1 member"))
            #expect(try run(["list", archive], status: 0).stdout == "small.txt\n")
            #expect(try run(["verify", archive], status: 0).stdout == "OK: 1 member verified\n")
            try run(["extract", archive, "-C", tree.path("out")], status: 0)
            #expect(try Data(contentsOf: tree.url("out/small.txt")) == Data("small".utf8))
            try run(["extract", archive, "small.txt", "-C", tree.path("one")], status: 0)
            #expect(try Data(contentsOf: tree.url("one/small.txt")) == Data("small".utf8))
            try run(["salvage", archive, "-C", tree.path("rescued")], status: 0)
            #expect(try Data(contentsOf: tree.url("rescued/small.txt")) == Data("small".utf8))
        }

        /// Read from a pipe, what follows the tar stream is kept only while it can be our index:
        /// filler after the end marker is dropped as it comes (a 3 MB stream with 1.2 GiB of it
        /// made a receiver hold 2 GB, then fail), and an "index" is held to what one of the
        /// members seen can take.
        @Test(arguments: [Array("filler".utf8), ArchiveIndex.magic])
        func aStreamKeepsOnlyAnIndexAfterTheTar(prefix: [UInt8]) throws {
            let tar = try Self.smallTar()
            let trailing = try Craft.zeroBlock(chunks: 512, prefix: prefix)
            _ = try write(
                "trailing.tar.xz",
                try Craft.archive(
                    dataBlocks: [try Craft.block(tar), trailing], entries: [Self.smallEntry], tarSize: UInt64(tar.count + (512 << 20))))
            let run = try ShellPipeline.run(
                "s=0; cat trailing.tar.xz | \(AMKProcess.timeTool) -f %M -o rss \"$AMK\" verify - || s=$?; tail -1 rss >&2; exit $s",
                in: tree.root)
            let peak = Int(run.stderr.split(separator: "\n").last?.trimmingCharacters(in: .whitespaces) ?? "") ?? .max
            #expect(peak < Self.bound, "peaked at \(peak / 1024) MiB: \(run.stderr)")
            if prefix == ArchiveIndex.magic {
                #expect(run.status != 0 && run.stderr.contains("bytes of index follow the tar stream"), "\(run.stderr)")
            } else {
                #expect(run.status == 0 && run.stdout == "OK: 1 member verified\n", "\(run.stdout) \(run.stderr)")
            }
        }

        @Test func aGibibyteMemberIsWrittenAsItIsDecoded() throws {
            // big.bin's 1 GiB of zeros is one block: extraction writes it slice by slice.
            let head = try Self.header("big.bin", size: Self.gibibyte)
            let zeros = try Craft.zeroBlock(chunks: Self.gibibyte / Craft.zeroChunkSize)
            let end = TarEncoder.endOfArchive
            let tarSize = UInt64(head.count + Self.gibibyte + end.count)
            let big = Self.entry("big.bin", size: Self.gibibyte, at: 0, checksum: Craft.crc64OfZeros(UInt64(Self.gibibyte)))
            let archive = try write(
                "big.tar.xz",
                try Craft.archive(
                    dataBlocks: [try Craft.block(head), zeros, try Craft.block(end)],
                    entries: [big], tarSize: tarSize))
            #expect(try run(["verify", archive], status: 0).stdout == "OK: 1 member verified\n")
            try run(["extract", archive, "-C", tree.path("out")], status: 0)
            let written = try FileManager.default.attributesOfItem(atPath: tree.path("out/big.bin"))[.size] as? Int
            #expect(written == Self.gibibyte)
            try FileManager.default.removeItem(at: tree.url("out"))
        }

        @Test func anIndexOfTenMillionEmptyRecordsIsRefusedCheaply() throws {
            // 10,000,000 all-zero records (960 MB once decoded, 2.1 GB as entries) compressed to
            // about 200 KB, after a tar of one small file.
            let tar = try Self.smallTar()
            var indexHeader = ArchiveIndex(entries: [], tarSize: UInt64(tar.count), chunkSize: 1 << 20, metadata: [:]).encoded()
            indexHeader.replaceSubrange(16..<24, with: Craft.le(UInt64(10_000_000)))
            let indexBytes = 64 + 10_000_000 * 96
            let chunks = (indexBytes + Craft.zeroChunkSize - 1) / Craft.zeroChunkSize
            let index = try Craft.zeroBlock(chunks: chunks, prefix: indexHeader)
            let archive = try write(
                "records.tar.xz",
                try Craft.archive(
                    dataBlocks: [try Craft.block(tar)], entries: [Self.smallEntry],
                    tarSize: UInt64(tar.count), richIndex: index))
            let size = try FileManager.default.attributesOfItem(atPath: archive)[.size] as? Int ?? 0
            #expect(size < 250_000, "\(size) bytes")
            for command in ["info", "list", "verify"] {
                #expect(try run([command, archive], status: 1).stderr.contains("limit"))
            }
            try run(["extract", archive, "-C", tree.path("out")], status: 1)
            #expect(!FileManager.default.fileExists(atPath: tree.path("out/small.txt")))
            // Salvage needs no index: it walks the blocks (the index block twice, never whole).
            try run(["salvage", archive, "-C", tree.path("rescued")], status: 0)
            #expect(try Data(contentsOf: tree.url("rescued/small.txt")) == Data("small".utf8))
        }

        @Test func aBlockDeclaringAPebibyteIsATypedError() throws {
            // The block header declares no sizes; the xz Index and the AMKINDEX agree on 2^50
            // bytes. Reserving them aborted the process ("failed to allocate").
            let tar = try Self.smallTar()
            var block = try Craft.withoutSizes(try Craft.block(tar))
            block.indexedSize = 1 << 50
            let archive = try write("pebibyte.tar.xz", try Craft.archive(dataBlocks: [block], entries: [Self.smallEntry], tarSize: 1 << 50))
            #expect(try run(["verify", archive], status: 1).stderr.contains("\(1 << 50)"))
            try run(["extract", archive, "-C", tree.path("out")], status: 1)
            try run(["info", archive], status: 0)
        }

        /// `xz -0` of `bytes`, as `tar -cJf` would write a plain archive.
        func xz(_ bytes: [UInt8], to name: String) throws -> String {
            let raw = try write(name + ".tar", bytes)
            let xz = try ChildProcess.run("/usr/bin/xz", ["-0", "-f", "--check=crc64", raw])
            guard xz.status == 0 else { throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: xz.stderr]) }
            return raw + ".xz"
        }

        /// `tar | xz` streams of empty files with 92-byte names, read from a pipe: every member
        /// seen was kept until the end, in case an index followed to check them against (180
        /// bytes each in a release build, more in a debug one; 600 MiB for 400,000 with 246-byte
        /// names), and `list -` kept them to print them at the end. A stream's reading keeps a
        /// bounded number of fingerprints instead, and a listing prints each member as it comes:
        /// six times the members take the same memory.
        @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/xz")))
        func aStreamOfManyMembersIsReadInTheMemoryOfAFewOnes() throws {
            func stream(of count: Int) throws -> String {
                var tar = try TarEncoder.encode(TarHeader(path: "top/", kind: .directory, size: 0, mode: 0o755, mtime: Self.mtime))
                tar.reserveCapacity((count + 3) * 512)
                let prefix = "top/" + String(repeating: "n", count: 81)
                for i in 0..<count {
                    let number = String(i)
                    tar += try Self.header(prefix + String(repeating: "0", count: 7 - number.count) + number, size: 0)
                }
                return try xz(tar + TarEncoder.endOfArchive, to: "members-\(count)")
            }
            var peaks: [String: [Int]] = [:]
            var large = ""
            for count in [20_000, 120_000] {
                let out = tree.path("members-out-\(count)")
                large = try stream(of: count)
                let (result, peak) = try AMKProcess.runMeasured(["extract", "-q", "-", "-C", out], piping: large)
                print("amk extract - of \(count) members: exit \(result.status), peak RSS \(peak / 1024) MiB")
                #expect(result.status == 0, "\(result.stderr)")
                #expect(try FileManager.default.contentsOfDirectory(atPath: out + "/top").count == count)
                peaks["extract", default: []].append(peak)
                // A listing is printed as the members come.
                let (listed, listPeak) = try AMKProcess.runMeasured(["list", "-"], piping: large)
                print("amk list - of \(count) members: exit \(listed.status), peak RSS \(listPeak / 1024) MiB")
                #expect(listed.status == 0, "\(listed.stderr)")
                #expect(listed.stdout.split(separator: "\n").count == count + 1)
                peaks["list", default: []].append(listPeak)
            }
            for (command, figures) in peaks {
                #expect(
                    figures[1] - figures[0] < 8 << 10,
                    "amk \(command) -: peak RSS \(figures[0] / 1024) MiB for 20,000 members, \(figures[1] / 1024) MiB for 120,000")
                #expect(figures[1] < Self.bound)
            }
            try run(["verify", "-q", "-"], piping: large, status: 0)
        }

        /// Folder headers each with a 1 MB extended attribute (and the ACL text that comes with
        /// them): every folder's header was kept, attributes and all, until the folders' times
        /// and modes were set at the end, with `--xattrs` or without (1,500 of them, 219 KB of
        /// archive, held 1.5 GB). Now only what will be restored is kept, within a budget.
        @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/xz")))
        func foldersWithLargeAttributesAreNotAllHeldUntilTheEnd() throws {
            let value = [UInt8](repeating: UInt8(ascii: "v"), count: 1_000_000)
            var tar: [UInt8] = []
            for i in 0..<200 {
                var folder = TarHeader(path: "d\(i)/", kind: .directory, size: 0, mode: 0o755, mtime: Self.mtime)
                folder.extendedAttributeList = [ExtendedAttribute(name: "user.big", value: value)]
                tar += try TarEncoder.encode(folder)
            }
            tar += try Self.smallTar()
            let archive = try xz(tar, to: "attribute-folders")
            let size = try FileManager.default.attributesOfItem(atPath: archive)[.size] as? Int ?? 0
            #expect(size < 2_000_000, "\(size) bytes")
            for (name, options) in [("plain", [String]()), ("xattrs", ["--xattrs", "--xattrs-include", "user.*"])] {
                let out = tree.path("attribute-folders-\(name)")
                try run(["extract", "-q", archive, "-C", out] + options, status: 0)
                #expect(FileManager.default.fileExists(atPath: out + "/d199"))
                #expect(FileManager.default.fileExists(atPath: out + "/small.txt"))
            }
        }

        /// An archive without our index (`tar | xz`) of 150,000 empty members: `list -l` and
        /// `list --json` of the file kept every member, and the JSON text of all of them, until
        /// the end (2,097,152 members in 156 KB took 2.6 GB as JSON). They print each member as it
        /// comes, as from a pipe, in the same memory for any number of members; and what they
        /// print is what the whole listing printed.
        @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/xz")))
        func aListingWithoutTheIndexIsPrintedAsItComes() async throws {
            var tar: [UInt8] = []
            tar.reserveCapacity(150_002 * 512)
            for i in 0..<150_000 { tar += try Self.header("m/\(i)", size: 0) }
            let many = try xz(tar + TarEncoder.endOfArchive, to: "many-members")
            for mode in ["-l", "--json"] {
                let result = try run(["list", mode, many], status: 0)
                #expect(result.stdout.utf8.count > 150_000 * 20, "\(mode): \(result.stdout.utf8.count) bytes")
            }
            // The same text as the listing of the whole, here where every size fits its column.
            var small: [UInt8] = []
            for (i, size) in [0, 5, 123_456, 70].enumerated() {
                small += try Self.header("d/f\(i)", size: size) + [UInt8](repeating: 0x61, count: size)
                small += [UInt8](repeating: 0, count: TarEncoder.padding(forContentSize: UInt64(size)))
            }
            let plain = try xz(small + TarEncoder.endOfArchive, to: "few-members")
            let entries = try await ArchiveReader(path: plain).entries()
            let json = try run(["list", "--json", plain], status: 0).stdout
            let expected = try JSONOutput.text(entries.map(ListedEntry.init)) + "\n"
            #expect(json == expected)
            let long = try run(["list", "-l", plain], status: 0).stdout
            let listing = LongListing(entries: entries)
            #expect(long == entries.map { listing.line(for: $0) + "\n" }.joined())
            let none = try xz(TarEncoder.endOfArchive, to: "no-members")
            #expect(try run(["list", "--json", none], status: 0).stdout == (try JSONOutput.text([ListedEntry]())) + "\n")
        }

        @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/xz")))
        func aPlainArchiveOfGlobalHeadersStaysSmall() throws {
            // 3,000 pax global headers of 60 KB each (180 MB of tar in a few hundred KB of xz),
            // all setting the same AMK key: the reader keeps the latest value, not all of them.
            let value = String(repeating: "a", count: 60_000)
            let one = try TarEncoder.encodeGlobalHeader([("AMK.note", value)])
            var tar: [UInt8] = []
            tar.reserveCapacity(one.count * 3000 + 1024)
            for _ in 0..<3000 { tar += one }
            tar += try Self.smallTar()
            let archive = try xz(tar, to: "globals")
            let size = try FileManager.default.attributesOfItem(atPath: archive)[.size] as? Int ?? 0
            #expect(size < 1_000_000, "\(size) bytes")
            #expect(try run(["list", archive], status: 0).stdout == "small.txt\n")
            try run(["info", archive], status: 0)
            try run(["verify", archive], status: 0)

            // The same with a new key in each header: refused at the cap, cheaply.
            var distinct: [UInt8] = []
            for i in 0..<3000 { distinct += try TarEncoder.encodeGlobalHeader([("AMK.k\(i)", value)]) }
            distinct += try Self.smallTar()
            let many = try xz(distinct, to: "many-keys")
            #expect(try run(["list", many], status: 1).stderr.contains("metadata"))
        }
    }
}
