import Foundation
import Synchronization
import Tar
import TestSupport
import Testing
import XZ

@testable import IndexedArchive

extension EngineSuites {
    /// A block's bytes come out of the decoder before its check is read: through a pipe, from a
    /// file whose xz Index cannot be read, and for a block too large to hold. A byte changed in
    /// a block's stored bytes decodes without complaint, so the members it wrote were kept, one
    /// of them with the changed byte, while the extraction failed only at the block's end. Every
    /// reader now keeps exactly the members whose bytes have passed their check.
    @Suite(.enabled(if: toolExists("xz"), "needs xz"))
    struct ExtractorVerificationTests {
        static let blockSize = 2 << 20

        /// 20 members of 300,000 random bytes (6 MB of tar) through `xz -T2 --block-size=2MiB`:
        /// three blocks that give their sizes, the random bytes stored as they are. One byte of
        /// the second block, near its end, is changed, inside the member that holds it.
        struct Damaged {
            var contents: [String: [UInt8]] = [:]
            /// Where each member's content ends in the tar stream.
            var ends: [String: UInt64] = [:]
            var archive: [UInt8] = []
            var damagedMember = ""

            /// The members whose bytes all lie in the first block: the only sound ones.
            var sound: [String] { ends.filter { $0.value <= UInt64(blockSize) }.map(\.key).sorted() }
        }

        static func damaged() async throws -> Damaged {
            var made = Damaged()
            var members: [(TarHeader, [UInt8])] = []
            var offset: UInt64 = 0
            var state: UInt64 = 0x9E37_79B9_7F4A_7C15
            for i in 0..<20 {
                var content = [UInt8](repeating: 0, count: 300_000)
                for j in content.indices {
                    state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                    content[j] = UInt8(truncatingIfNeeded: state >> 56)
                }
                let name = "m\(i < 10 ? "0" : "")\(i).bin"
                let header = TarHeader(
                    path: name, kind: .regular, size: UInt64(content.count), mode: 0o644, mtime: TarTimestamp(seconds: 1_700_000_000))
                offset += UInt64(try TarEncoder.encode(header).count)
                made.ends[name] = offset + UInt64(content.count)
                offset += UInt64(content.count + TarEncoder.padding(forContentSize: UInt64(content.count)))
                made.contents[name] = content
                members.append((header, content))
            }
            let tar = try tarStream(members)
            let result = try await runTool(
                ["xz", "-c", "-0", "-T2", "--block-size=\(blockSize)", "--check=crc64"], stdin: tar)
            try #require(result.status == 0)
            var archive = result.stdout
            let target = 2 * blockSize - 5_000
            let marker = tar[target..<(target + 32)]
            let at = try #require(
                (0...(archive.count - 32)).first { archive[$0..<($0 + 32)].elementsEqual(marker) }, "the random bytes are stored")
            archive[at] ^= 0x01
            made.archive = archive
            made.damagedMember = try #require(made.ends.filter { $0.value > UInt64(target) }.min { $0.value < $1.value }?.key)
            return made
        }

        /// The names under `out`, each checked against its content.
        static func kept(_ out: String, _ damaged: Damaged) async throws -> [String] {
            let names = listing(out)
            for name in names {
                #expect(try await readBytes(out + "/" + name) == damaged.contents[name], "\(name) is not the member's content")
            }
            return names
        }

        @Test func aPipeKeepsOnlyTheMembersOfVerifiedBlocks() async throws {
            let dir = try TemporaryDirectory()
            let damaged = try await Self.damaged()
            var options = ExtractOptions()
            let removed = Mutex<[String]>([])
            options.onFailure = { error in removed.withLock { $0.append(error.member ?? "") } }
            let error = await #expect(throws: ArchiveError.self) {
                try await ArchiveStreamReaderTests.extract(damaged.archive, to: dir.path + "/out", options: options)
            }
            #expect(error?.code == .corrupt)
            #expect(try await Self.kept(dir.path + "/out", damaged) == damaged.sound)
            let reported = removed.withLock { $0 }
            // The members of the second block that were whole when its check failed are named,
            // then the one it cut.
            let whole = damaged.ends.filter { $0.value > UInt64(Self.blockSize) && $0.value <= UInt64(2 * Self.blockSize - 5_000) }
            #expect(reported == whole.map(\.key).sorted() + [damaged.damagedMember])
        }

        /// The same damage read from a file: blocks decoded whole before a byte is handed on (the
        /// default), blocks larger than the buffer bound streamed a piece at a time, and the file
        /// read through one decoder because its xz Index cannot be read (bytes appended).
        @Test(arguments: ["buffered", "streamed", "sequential"])
        func aFileKeepsOnlyTheMembersOfVerifiedBlocks(_ reading: String) async throws {
            let dir = try TemporaryDirectory()
            let damaged = try await Self.damaged()
            let path = dir.path + "/d.tar.xz"
            try await writeBytes(path, damaged.archive + (reading == "sequential" ? [1, 2, 3, 4] : []))
            let reader = try await ArchiveReader.open(
                path: path, maxBufferedBlockSize: reading == "streamed" ? 1 << 20 : ArchiveReader.defaultMaxBufferedBlockSize)
            let error = await #expect(throws: ArchiveError.self) { try await reader.extract(to: dir.path + "/out") }
            #expect(error?.code == .corrupt)
            let kept = try await Self.kept(dir.path + "/out", damaged)
            #expect(kept == damaged.sound, "\(kept) \(damaged.sound) \(String(describing: error))")
        }

        /// A limit met before a block's check leaves its bytes unverified: what they made goes,
        /// named (a member with a changed byte stayed behind a limit, named by nothing), though
        /// what the verified bytes before made stays. Here one `xz` block without sizes, unverified
        /// to its end.
        @Test func aLimitRemovesWhatUnverifiedBytesMade() async throws {
            let dir = try TemporaryDirectory()
            // b.txt is longer than a slice of output: the limit meets it before the stream's end.
            let tar = try tarStream([
                tarFile("a.txt", String(repeating: "a", count: 1000)),
                tarFile("b.txt", (0..<60_000).map { "line \($0)\n" }.joined())
            ])
            let xz = try await xzTool(tar)
            var options = ExtractOptions()
            options.maxBytes = 3000
            let removed = Mutex<[String]>([])
            options.onFailure = { error in removed.withLock { $0.append(error.member ?? "") } }
            let error = await #expect(throws: ArchiveError.self) {
                try await ArchiveStreamReaderTests.extract(xz, to: dir.path + "/out", options: options)
            }
            #expect(error?.code == .limitExceeded, "\(String(describing: error))")
            #expect(listing(dir.path + "/out").isEmpty)
            #expect(removed.withLock { $0 } == ["a.txt"])
        }

        /// A cancellation keeps what unverified bytes made, as what came before it: the reading
        /// found nothing wrong, the user stopped it. Any other failure removes it.
        @Test(arguments: [true, false]) func aCancellationKeepsWhatUnverifiedBytesMade(cancelled: Bool) throws {
            let dir = try TemporaryDirectory()
            let extractor = try Extractor(destination: dir.path + "/out", options: ExtractOptions(), archiveSize: 0)
            extractor.verified(through: 0)
            try extractor.begin(tarFile("kept.txt", "kept").0)
            try Array("kept".utf8).withUnsafeBytes { try extractor.write($0) }
            try extractor.endMember()
            extractor.settle(reach: 1024)
            try extractor.begin(tarFile("cut.txt", "cut short").0)
            try Array("cut".utf8).withUnsafeBytes { try extractor.write($0) }
            extractor.abandonCurrent(after: cancelled ? CancellationError() : ArchiveError(.io(errno: ENOSPC), "full"))
            #expect(listing(dir.path + "/out") == (cancelled ? ["kept.txt"] : []))
        }

        /// Damage in the last block, read when the file is opened (to look for a pixz index):
        /// the opening failed, and nothing was extracted. A damaged pixz index, which no member
        /// depends on, lets every member be extracted, then fails the extraction; a damaged last
        /// block of tar stream (an `xz -T` archive's) is met where the reading reaches it, after
        /// the members of the blocks before it.
        @Test(arguments: ["pixz index", "last data block"]) func damageInTheLastBlockLosesNoSoundMember(_ place: String) async throws {
            let dir = try TemporaryDirectory()
            let packed = try await PackedTree.make()
            var bytes = try await readBytes(packed.archive)
            let blocks = try await xzToolBlocks(packed.archive)
            let archive = dir.path + "/d.tar.xz"
            let target: ToolBlock
            if place == "pixz index" {
                target = try #require(blocks.last)
            } else {
                // The tar stream alone, through xz -T in blocks small enough that the last is.
                let tar = try await runTool(["xz", "-dc", packed.archive])
                let tool = try await runTool(["xz", "-c", "-0", "-T2", "--block-size=64KiB", "--check=crc64"], stdin: tar.stdout)
                bytes = tool.stdout
                try await writeBytes(archive, bytes)
                target = try #require(try await xzToolBlocks(archive).last)
            }
            bytes[Int(target.compressedOffset + target.totalSize - 1)] ^= 0x20  // its check
            try await writeBytes(archive, bytes)
            let reader = try await ArchiveReader.open(path: archive)
            let error = await #expect(throws: ArchiveError.self) { try await reader.extract(to: dir.path + "/out") }
            #expect(error?.code == .corrupt, "\(String(describing: error))")
            let different = try await filesThatDifferFromSource(dir.path + "/out/src", source: packed.root)
            #expect(different.isEmpty, "\(different)")
            if place == "pixz index" {
                let extracted = try FileManager.default.subpathsOfDirectory(atPath: dir.path + "/out/src").count
                let source = try FileManager.default.subpathsOfDirectory(atPath: packed.root).count
                #expect(extracted == source, "every member, none of which depends on the pixz index")
            } else {
                #expect(!listing(dir.path + "/out/src").isEmpty, "the members of the sound blocks")
            }
        }

        /// A pixz index block whose header asks for a 4 GiB dictionary, past the decoders' memory
        /// limit: the opening refused the whole archive (list, verify and extract alike), where a
        /// damaged one is kept for the end. Now it is kept alike: the members list and extract,
        /// and the extraction then fails naming the block.
        @Test(.enabled(if: toolExists("xz")))
        func aPixzIndexNeedingTooMuchMemoryIsKeptForTheEnd() async throws {
            let dir = try TemporaryDirectory()
            let packed = try await PackedTree.make()
            var bytes = try await readBytes(packed.archive)
            let last = try #require(try await xzToolBlocks(packed.archive).last)
            // The block header: its size, flags, optional sizes (VLIs), then the LZMA2 filter
            // (ID 0x21, one byte of properties: the dictionary size), padding and a CRC32.
            let start = Int(last.compressedOffset)
            let headerSize = (Int(bytes[start]) + 1) * 4
            var position = start + 2
            for present in [bytes[start + 1] & 0x40 != 0, bytes[start + 1] & 0x80 != 0] where present {
                while bytes[position] & 0x80 != 0 { position += 1 }
                position += 1
            }
            try #require(bytes[position] == 0x21 && bytes[position + 1] == 1, "an LZMA2 filter with one byte of properties")
            bytes[position + 2] = 40  // a 4 GiB dictionary
            let crc = CRC.crc32(Array(bytes[start..<start + headerSize - 4]))
            withUnsafeBytes(of: crc.littleEndian) { bytes.replaceSubrange(start + headerSize - 4..<start + headerSize, with: $0) }
            let archive = dir.path + "/memory.tar.xz"
            try await writeBytes(archive, bytes)
            let reader = try await ArchiveReader.open(path: archive)
            #expect(try await reader.entries().count == (try await ArchiveReader.open(path: packed.archive).entries().count))
            let error = await #expect(throws: ArchiveError.self) { try await reader.extract(to: dir.path + "/out") }
            #expect(error?.code == .limitExceeded && error?.message.contains("memory") == true, "\(String(describing: error))")
            let different = try await filesThatDifferFromSource(dir.path + "/out/src", source: packed.root)
            #expect(different.isEmpty, "\(different)")
            let extracted = try FileManager.default.subpathsOfDirectory(atPath: dir.path + "/out/src").count
            #expect(extracted == (try FileManager.default.subpathsOfDirectory(atPath: packed.root).count))
        }

        /// Without damage nothing is removed: every member arrives, through a pipe and from a
        /// file read a piece at a time.
        @Test func soundBlocksKeepEveryMember() async throws {
            let dir = try TemporaryDirectory()
            var sound = try await Self.damaged()
            let result = try await runTool(
                ["xz", "-c", "-0", "-T2", "--block-size=\(Self.blockSize)", "--check=crc64"],
                stdin: try tarStream(
                    sound.contents.keys.sorted().map { name in
                        (
                            TarHeader(
                                path: name, kind: .regular, size: UInt64(sound.contents[name]!.count), mode: 0o644,
                                mtime: TarTimestamp(seconds: 1_700_000_000)), sound.contents[name]!
                        )
                    }))
            sound.archive = result.stdout
            _ = try await ArchiveStreamReaderTests.extract(sound.archive, to: dir.path + "/pipe")
            #expect(try await Self.kept(dir.path + "/pipe", sound) == sound.contents.keys.sorted())
            try await writeBytes(dir.path + "/s.tar.xz", sound.archive + [1, 2, 3, 4])
            let reader = try await ArchiveReader.open(path: dir.path + "/s.tar.xz")
            // The appended bytes make the file damaged at its end, after every member.
            await #expect(throws: ArchiveError.self) { try await reader.extract(to: dir.path + "/file") }
            #expect(try await Self.kept(dir.path + "/file", sound) == sound.contents.keys.sorted())
        }
    }
}
