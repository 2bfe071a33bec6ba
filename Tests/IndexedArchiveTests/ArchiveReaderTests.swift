import Foundation
import Tar
import TestSupport
import Testing
import XZ

@testable import IndexedArchive

extension EngineSuites {
    @Suite(.background) struct ArchiveReaderTests {
        @Test(.enabled(if: toolExists("xz")))
        func infoDescribesTheFile() async throws {
            let packed = try await PackedTree.make()
            let info = try await ArchiveReader(path: packed.archive).info()
            let blocks = try await xzToolBlocks(packed.archive)
            #expect(info.streams == 1)
            #expect(info.blocks == blocks.count)
            #expect(info.dataBlocks == packed.summary.blocks)
            #expect(info.isIndexed)
            #expect(info.hasPixzIndex)
            #expect(info.fileSize == UInt64(try await readBytes(packed.archive).count))
            #expect(info.uncompressedSize == blocks.last!.uncompressedOffset + blocks.last!.uncompressedSize)
            #expect(info.tarSize == blocks[blocks.count - 2].uncompressedOffset)
            #expect(info.chunkSize == 1 << 20)
            #expect(info.indexedEntries == packed.summary.entries)
            #expect(info.metadata["resourcesVersion"] == "7")
            #expect(info.ratio > 0.3 && info.ratio < 1)
        }

        /// Every index entry checked against the raw tar stream that `xz -dc` produces.
        @Test(.enabled(if: toolExists("xz")))
        func entriesMatchTheTarStreamAndTheSourceTree() async throws {
            let packed = try await PackedTree.make()
            let reader = try ArchiveReader(path: packed.archive)
            let entries = try await reader.entries()
            let raw = try await runTool(["xz", "-dc", packed.archive]).stdout
            let source = try await TreeSnapshot.of(packed.root)

            #expect(entries.count == source.items.count + 1)
            #expect(entries.map(\.path).first == "src/")
            // Depth-first, each directory's names grouped by type, then sorted bytewise (the
            // default WalkOrder): the order is deterministic.
            func parts(_ path: String) -> [[UInt8]] {
                path.split(separator: "/").map { Array($0.utf8) }.map { WalkOrder.type(of: $0) + [0] + $0 }
            }
            for (a, b) in zip(entries, entries.dropFirst()) {
                #expect(
                    parts(a.name).lexicographicallyPrecedes(parts(b.name)) { $0.lexicographicallyPrecedes($1) },
                    "\(a.name) before \(b.name)")
            }
            for entry in entries {
                let header = Int(entry.headerOffset)
                let typeflag = raw[header + 156]
                #expect(Array(raw[header + 257..<header + 262]) == Array("ustar".utf8), "\(entry.path): a header at its offset")
                #expect(typeflag == (entry.hasPaxHeader ? UInt8(ascii: "x") : entry.kind.typeflag), "\(entry.path)")
                #expect(entry.dataOffset % 512 == 0)
                guard entry.path != "src/" else { continue }
                let item = try #require(source.items[String(entry.name.dropFirst(4))], "\(entry.path) is in the source")
                #expect(entry.mode == item.mode || entry.kind == .symbolicLink, "\(entry.path) mode")
                if entry.kind != .symbolicLink {
                    #expect(
                        entry.mtime == TarTimestamp(seconds: Int64(item.mtimeSeconds), nanoseconds: UInt32(item.mtimeNanoseconds)),
                        "\(entry.path) mtime")
                }
                switch entry.kind {
                case .regular:
                    #expect(item.type == "file")
                    #expect(
                        Array(raw[Int(entry.dataOffset)..<Int(entry.dataOffset + entry.size)]) == item.content,
                        "\(entry.path) bytes in place")
                    #expect(entry.checksum == CRC.crc64(item.content))
                case .hardLink:
                    // The first path met in archive order holds the content; later ones link to it.
                    let targets = [
                        "src/hardlink-to-notes": "src/docs/notes.txt",
                        "src/zz-hardlink-to-long-path": "src/\(CompatTree.over255)"
                    ]
                    #expect(entry.linkTarget == targets[entry.name], "\(entry.path)")
                    #expect(entry.size == 0)
                case .symbolicLink:
                    #expect(entry.linkTarget == item.link)
                case .directory:
                    #expect(entry.path.hasSuffix("/"))
                    #expect(item.type == "dir")
                default:
                    Issue.record("unexpected kind \(entry.kind) for \(entry.path)")
                }
            }
            let owned = try #require(entries.first { $0.name == "src/owned.txt" })
            if runningAsRoot {
                #expect(owned.uid == UInt64(CompatTree.bigUID) && owned.gid == UInt64(CompatTree.bigGID))
            }
        }

        /// A file that does not start as xz (empty, random, gzip) is refused when it is opened,
        /// naming the file and what it seems to be: opening promises to read the file, and the
        /// error came only from the first reading. A file whose end is damaged still opens, for
        /// the sequential reader and salvage.
        @Test func aFileThatIsNotXZIsRefusedWhenOpened() async throws {
            let dir = try TemporaryDirectory()
            let gzip: [UInt8] = [0x1F, 0x8B, 0x08, 0x00] + [UInt8](repeating: 0, count: 60)
            let cases: [(String, [UInt8], String)] = [
                ("empty", [], "empty file"), ("random", sampleBytes(count: 1000, seed: 3, text: false), "magic bytes"),
                ("gzip", gzip, "gzip-compressed data")
            ]
            for (name, bytes, said) in cases {
                let path = dir.path + "/" + name
                try createFile(path, bytes)
                let error = #expect(throws: ArchiveError.self, "\(name)") { _ = try ArchiveReader(path: path) }
                #expect(error?.code == .notAnArchive && error?.path == path && error?.offset == 0, "\(String(describing: error))")
                #expect(error?.message.contains(said) == true, "\(name): \(String(describing: error))")
                await #expect(throws: ArchiveError.self, "\(name), opened asynchronously") { _ = try await ArchiveReader.open(path: path) }
            }
            let packed = try await PackedTree.make()
            let whole = try await readBytes(packed.archive)
            let cut = dir.path + "/cut.tar.xz"
            try createFile(cut, Array(whole.dropLast(8)))
            let reader = try ArchiveReader(path: cut)
            #expect(reader.mode != .indexed, "opened without its xz Index")
        }

        @Test func entryNamedAcceptsADirectoryWithOrWithoutItsSlash() async throws {
            let packed = try await PackedTree.make()
            let reader = try ArchiveReader(path: packed.archive)
            #expect(try await reader.entry(named: "src/docs")?.kind == .directory)
            #expect(try await reader.entry(named: "src/docs/")?.path == "src/docs/")
            #expect(try await reader.entry(named: "src/dangling")?.linkTarget == CompatTree.danglingTarget)
            #expect(try await reader.entry(named: "src/nothing") == nil)
            #expect(try await reader.entry(named: "docs/notes.txt") == nil, "paths are not matched by suffix")
        }

        @Test func readDeliversAMemberThatSpansBlocksInSlices() async throws {
            let packed = try await PackedTree.make()
            let reader = try ArchiveReader(path: packed.archive)
            let entry = try #require(try await reader.entry(named: "src/docs/big.json"))
            #expect(entry.dataOffset / (1 << 20) != (entry.dataOffset + entry.size) / (1 << 20), "spans several blocks")
            var slices = 0
            var bytes: [UInt8] = []
            try await reader.read(member: "src/docs/big.json") { slice in
                slices += 1
                bytes.append(contentsOf: slice)
            }
            #expect(bytes == Samples.text2Point5M)
            #expect(slices >= 3)
        }

        @Test func contentsOfEveryKind() async throws {
            let packed = try await PackedTree.make()
            let reader = try ArchiveReader(path: packed.archive)
            #expect(try await reader.contents(of: "src/empty.txt").isEmpty)
            #expect(try await reader.contents(of: "src/exact512.bin") == Samples.noise512)
            #expect(try await reader.contents(of: "src/media/noise.bin") == Samples.noise1Point2M)
            #expect(try await reader.contents(of: "src/\(CompatTree.over255)") == Array("over 255 bytes".utf8))
            #expect(try await reader.contents(of: "src/docs").isEmpty, "a directory has no content")
            #expect(try await reader.contents(of: "src/link-to-notes").isEmpty, "a symlink is not followed")

            let missing = await expectArchiveError("missing") { try await reader.contents(of: "src/missing") }
            #expect(missing?.code == .memberNotFound)
            #expect(missing?.member == "src/missing")
            let big = await expectArchiveError("limit") { try await reader.contents(of: "src/docs/big.json", maxBytes: 1000) }
            #expect(big?.code == .limitExceeded)
        }

        @Test func contentsOfASequentialArchiveHonoursTheLimit() async throws {
            let dir = try TemporaryDirectory()
            let tar = try tarStream([tarFile("a.txt", String(repeating: "a", count: 5000)), tarFile("b.txt", "bee")])
            let path = dir.path + "/s.tar.xz"
            try await writeBytes(path, try await xzTool(tar))
            let reader = try ArchiveReader(path: path)
            #expect(reader.mode == .sequential)
            #expect(try await reader.contents(of: "b.txt") == Array("bee".utf8))
            #expect(await expectArchiveError("limit") { try await reader.contents(of: "a.txt", maxBytes: 4999) }?.code == .limitExceeded)
            #expect(await expectArchiveError("missing") { try await reader.contents(of: "c.txt") }?.code == .memberNotFound)
        }

        // MARK: - Metadata

        static let metadata = ["resourcesVersion": "42", "sourceApp": "com.example.notes", "note": "a = b; ünï ✓"]

        @Test(.enabled(if: toolExists("xz") && toolExists("tar")))
        func metadataTravelsInTheIndexAndInThePaxGlobalHeader() async throws {
            let dir = try TemporaryDirectory()
            try dir.file("src/a.txt", "alpha")
            let archive = dir.path + "/m.tar.xz"
            try await ArchivePacker.pack(
                [PackSource(path: dir.path + "/src")], to: .file(archive), options: testOptions(metadata: Self.metadata))

            var expected = Self.metadata
            expected["writer"] = ArchivePacker.writerVersion
            #expect(try await ArchiveReader(path: archive).metadata() == expected)

            // The raw tar: its first member is a pax global header with AMK.* records.
            let raw = try await runTool(["xz", "-dc", archive])
            try await writeBytes(dir.path + "/m.tar", raw.stdout)
            let text = String(decoding: raw.stdout.prefix(1024), as: UTF8.self)
            #expect(raw.stdout[raw.stdout.startIndex + 156] == UInt8(ascii: "g"))
            #expect(text.contains("AMK.resourcesVersion=42\n"))
            #expect(text.contains("AMK.note=a = b; ünï ✓\n"))
            let listing = try await runTool(["tar", "-tvf", dir.path + "/m.tar"])
            #expect(listing.status == 0)
            #expect(listing.stderr.isEmpty, "GNU tar ignores the vendor keywords silently: \(listing.stderr)")
            #expect(listing.stdoutString.split(separator: "\n").count == 2)

            // Recompressed by xz, the archive has no index: metadata comes from the global header.
            let plain = dir.path + "/p.tar.xz"
            try await writeBytes(plain, try await xzTool(raw.stdout))
            let sequential = try ArchiveReader(path: plain)
            #expect(sequential.mode == .sequential)
            #expect(try await sequential.metadata() == expected)
            #expect(try await sequential.entries().map(\.path) == ["src/", "src/a.txt"], "the global header is not a member")
        }

        @Test func anArchiveWithoutMetadataHasOnlyTheWriter() async throws {
            let dir = try TemporaryDirectory()
            try dir.file("src/a.txt", "alpha")
            let archive = dir.path + "/m.tar.xz"
            try await ArchivePacker.pack([PackSource(path: dir.path + "/src")], to: .file(archive), options: testOptions())
            #expect(try await ArchiveReader(path: archive).metadata() == ["writer": ArchivePacker.writerVersion])
        }

        // MARK: - Not archives

        @Test func whatIsNotAnArchiveIsATypedError() async throws {
            let dir = try TemporaryDirectory()
            let missing = #expect(throws: ArchiveError.self) { try ArchiveReader(path: dir.path + "/none.tar.xz") }
            #expect(missing?.code == .io(errno: ENOENT))
            #expect(missing?.path == dir.path + "/none.tar.xz")

            let directory = #expect(throws: ArchiveError.self) { try ArchiveReader(path: dir.path) }
            #expect(directory?.code == .notAnArchive)

            for (name, bytes) in [
                ("text", Array("just some text\n".utf8)), ("empty", []),
                ("xz-magic-only", [0xFD, 0x37, 0x7A, 0x58, 0x5A, 0x00]),
                ("plain-tar", try tarStream([tarFile("a", "b")]))
            ] {
                let path = dir.path + "/" + name
                try await writeBytes(path, bytes)
                do {
                    let reader = try ArchiveReader(path: path)
                    let entries = await expectArchiveError("\(name): entries") { try await reader.entries() }
                    #expect(entries.map { [.corrupt, .notAnArchive].contains($0.code) } == true, "\(name): \(String(describing: entries))")
                    await expectArchiveError("\(name): verify") { try await reader.verify() }
                    await expectArchiveError("\(name): extract") { try await reader.extract(to: dir.path + "/out") }
                    await expectArchiveError("\(name): metadata") { try await reader.metadata() }
                } catch let error as ArchiveError {
                    #expect([.corrupt, .notAnArchive].contains(error.code), "\(name): \(error)")
                }
            }
        }

        @Test func theIndexLimitsOfTheReaderAreEnforced() async throws {
            let dir = try TemporaryDirectory()
            for i in 0..<10 { try dir.file("src/f\(i)", "x") }
            let archive = dir.path + "/l.tar.xz"
            try await ArchivePacker.pack([PackSource(path: dir.path + "/src")], to: .file(archive), options: testOptions())
            let entries = #expect(throws: ArchiveError.self) { try ArchiveReader(path: archive, maxEntries: 10) }
            #expect(entries?.code == .limitExceeded)
            #expect(try ArchiveReader(path: archive, maxEntries: 11).mode == .indexed)
            let bytes = #expect(throws: ArchiveError.self) { try ArchiveReader(path: archive, maxIndexBytes: 200) }
            #expect(bytes?.code == .limitExceeded)
            #expect(bytes?.offset != nil, "names the index block")
        }

        /// With a buffer bound below the chunk size every data block is streamed in pieces rather
        /// than decoded ahead: the results are the same, and damage is still found where it is.
        @Test func blocksLargerThanTheBufferBoundAreStreamedWithTheSameResults() async throws {
            let packed = try await PackedTree.make()
            let reader = try ArchiveReader(path: packed.archive, maxBufferedBlockSize: 64 << 10)
            #expect(try await reader.verify() == packed.summary.entries)
            let out = packed.dir.path + "/out"
            try await reader.extract(to: out)
            expectSameTree(
                try await TreeSnapshot.of(packed.root).droppingSetIDBits(), try await TreeSnapshot.of(out + "/src"), "streamed extraction")
            #expect(try await reader.contents(of: "src/docs/big.json") == Samples.text2Point5M)
            var options = ExtractOptions()
            options.members = ["src/media/noise.bin"]
            try await reader.extract(to: packed.dir.path + "/one", options: options)
            #expect(try await readBytes(packed.dir.path + "/one/src/media/noise.bin") == Samples.noise1Point2M)

            // A flipped byte in the middle of the second data block.
            let blocks = try await xzToolBlocks(packed.archive)
            var bytes = try await readBytes(packed.archive)
            let at = Int(blocks[1].compressedOffset + blocks[1].totalSize / 2)
            bytes[at] ^= 0x10
            let damaged = packed.dir.path + "/damaged.tar.xz"
            try await writeBytes(damaged, bytes)
            let error = await expectArchiveError("verify") {
                try await ArchiveReader(path: damaged, maxBufferedBlockSize: 64 << 10).verify()
            }
            #expect(error.map { [.corrupt, .checksumMismatch].contains($0.code) } == true, "\(String(describing: error))")
            let range = blocks[1].compressedOffset...(blocks[1].compressedOffset + blocks[1].totalSize)
            #expect(error?.offset.map { range.contains($0) } == true, "\(String(describing: error))")
        }

        @Test func anEmptyDirectoryMakesAValidArchive() async throws {
            let dir = try TemporaryDirectory()
            try FileManager.default.createDirectory(atPath: dir.path + "/empty", withIntermediateDirectories: false)
            let archive = dir.path + "/e.tar.xz"
            let summary = try await ArchivePacker.pack([PackSource(path: dir.path + "/empty")], to: .file(archive), options: testOptions())
            #expect(summary.entries == 1)
            #expect(summary.blocks == 1)
            let reader = try ArchiveReader(path: archive)
            #expect(reader.mode == .indexed)
            #expect(try await reader.entries().map(\.path) == ["empty/"])
            #expect(try await reader.verify() == 1)
        }

        // MARK: - Paths alone

        @Test func memberPathsAreTheEntriesPathsInEveryKindOfArchive() async throws {
            let packed = try await PackedTree.make()
            let entries = try await ArchiveReader.open(path: packed.archive).entries()
            #expect(entries.count > 5)
            #expect(try await ArchiveReader.memberPaths(path: packed.archive) == entries.map(\.path))
            // An archive without our index is read through.
            let dir = try TemporaryDirectory()
            let tar = try tarStream([tarDirectory("d"), tarFile("d/a.txt", "alpha"), tarSymlink("d/l", to: "a.txt")])
            let sequential = dir.path + "/s.tar.xz"
            try await writeBytes(sequential, try await xzTool(tar))
            #expect(try await ArchiveReader.memberPaths(path: sequential) == ["d/", "d/a.txt", "d/l"])
            // So is one with a version 1 index.
            let old = dir.path + "/v1.tar.xz"
            let index = ArchiveIndex(entries: try indexEntries(of: tar), tarSize: UInt64(tar.count), chunkSize: 1 << 20, metadata: [:])
            try await writeBytes(old, try indexedArchive(tar: tar, index: index.encodedVersion1()))
            #expect(try await ArchiveReader.memberPaths(path: old) == ["d/", "d/a.txt", "d/l"])
            // On the calling thread, only our index gives them; an archive without one says so.
            #expect(try ArchiveReader.memberPathListBlocking(path: packed.archive)?.strings == entries.map(\.path))
            #expect(try ArchiveReader.memberPathListBlocking(path: old)?.strings == ["d/", "d/a.txt", "d/l"])
            #expect(try ArchiveReader.memberPathListBlocking(path: sequential) == nil)
            #expect(throws: ArchiveError.self) { try ArchiveReader.memberPathListBlocking(path: dir.path + "/missing.tar.xz") }
        }

        @Test func memberPathsReadOnlyTheNamesButCheckThem() async throws {
            let dir = try TemporaryDirectory()
            let tar = try tarStream([tarDirectory("d"), tarFile("d/a.txt", "alpha"), tarFile("d/b.txt", "bravo")])
            let index = ArchiveIndex(
                entries: try indexEntries(of: tar), tarSize: UInt64(tar.count), chunkSize: 1 << 20, metadata: ["k": "v"])
            let good = index.encoded()
            let header = try ArchiveIndex.header(good, maxEntries: 10, archiveSize: nil, blockOffset: nil)
            let namesEnd = Int(header.pathsByteCount)
            // Damage after the names (the metadata's last pair claims a 200-byte key): a listing
            // of paths does not see it; opening the archive, which decodes the whole index,
            // refuses it.
            var late = good
            late[good.count - 10] = 200
            let lateArchive = dir.path + "/late.tar.xz"
            try await writeBytes(lateArchive, try indexedArchive(tar: tar, index: late))
            #expect(try await ArchiveReader.memberPaths(path: lateArchive) == ["d/", "d/a.txt", "d/b.txt"])
            #expect(await expectArchiveError("open") { try await ArchiveReader.open(path: lateArchive) }?.code == .corrupt)
            // Damage in the names (a NUL in the last one) is refused by both.
            var early = good
            early[namesEnd - 1] = 0
            let earlyArchive = dir.path + "/early.tar.xz"
            try await writeBytes(earlyArchive, try indexedArchive(tar: tar, index: early))
            let error = await expectArchiveError("paths") { try await ArchiveReader.memberPaths(path: earlyArchive) }
            #expect(error?.code == .corrupt)
            #expect(error?.path == earlyArchive && error?.offset != nil, "\(String(describing: error))")
            let blocking = #expect(throws: ArchiveError.self) { try ArchiveReader.memberPathListBlocking(path: earlyArchive) }
            #expect(blocking?.code == .corrupt && blocking?.offset == error?.offset)
        }

        /// `amk pack` writes archives whose front-coded names add up to more than the reader holds
        /// for the file's size: 7,000 empty files under a 3,000-byte folder path are 22 MB of names
        /// in a file of about 50 KB (allowance 16 MiB). Such an archive was refused by amk's own
        /// list, verify and extract; it is read from its tar stream instead.
        @Test func anIndexWhoseNamesPassTheAllowanceIsReadFromTheTarStream() async throws {
            let dir = try TemporaryDirectory()
            let folder = dir.path + "/src/" + Array(repeating: String(repeating: "c", count: 200), count: 15).joined(separator: "/")
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let leaf = String(repeating: "f", count: 200)
            for i in 0..<7_000 {
                #expect(FileManager.default.createFile(atPath: "\(folder)/\(leaf)\(i)", contents: nil))
            }
            let archive = dir.path + "/A.tar.xz"
            let summary = try await ArchivePacker.pack([PackSource(path: dir.path + "/src", archivePath: "src")], to: .file(archive))
            #expect(summary.entries == 7_016)
            let reader = try await ArchiveReader.open(path: archive)
            #expect(reader.mode == .sequential)
            let skipped = reader.indexSkipped ?? ""
            #expect(skipped.contains("names add up to more than the \(16 << 20) bytes"), "\(skipped)")
            #expect(try await reader.entries().count == summary.entries)
            #expect(try await reader.verify() == summary.entries)
            #expect(try await reader.extract(to: dir.path + "/out").entries == summary.entries)
            #expect(try await ArchiveReader.memberPaths(path: archive).count == summary.entries)
            #expect(try ArchiveReader.memberPathListBlocking(path: archive) == nil)
            // A limit the caller sets is still a refusal.
            let refused = await expectArchiveError("limit") { try await ArchiveReader.open(path: archive, maxIndexBytes: 16 << 20) }
            #expect(refused?.code == .limitExceeded && refused?.path == archive, "\(String(describing: refused))")
        }
    }
}
