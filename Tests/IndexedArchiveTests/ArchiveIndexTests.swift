import Foundation
import Tar
import TestSupport
import Testing

@testable import IndexedArchive

extension EngineSuites {
    @Suite struct ArchiveIndexTests {
        static let sample: ArchiveIndex = {
            let entries = [
                ArchiveEntry(
                    path: "app/", kind: .directory, size: 0, mode: 0o755, uid: 501, gid: 20,
                    mtime: TarTimestamp(seconds: 1_600_000_000, nanoseconds: 5), linkTarget: nil,
                    headerOffset: 1024, dataOffset: 1536, checksum: nil, hasPaxHeader: true),
                ArchiveEntry(
                    path: "app/ünïcödé-名前.txt", kind: .regular, size: 700, mode: 0o4755, uid: 0, gid: 0,
                    mtime: TarTimestamp(seconds: 0), linkTarget: nil,
                    headerOffset: 1536, dataOffset: 2560, checksum: 0xDEAD_BEEF_0123_4567, hasPaxHeader: true),
                ArchiveEntry(
                    path: "app/link", kind: .symbolicLink, size: 0, mode: 0o777, uid: 1, gid: 2,
                    mtime: TarTimestamp(seconds: -5, nanoseconds: 999_999_999), linkTarget: "../" + String(repeating: "t", count: 300),
                    headerOffset: 3584, dataOffset: 5120, checksum: nil, hasPaxHeader: true),
                ArchiveEntry(
                    path: "app/hard", kind: .hardLink, size: 0, mode: 0o644, uid: 1, gid: 2,
                    mtime: TarTimestamp(seconds: 7), linkTarget: "app/ünïcödé-名前.txt",
                    headerOffset: 5120, dataOffset: 5632, checksum: nil, hasPaxHeader: false),
                ArchiveEntry(
                    path: "app/empty", kind: .regular, size: 0, mode: 0o600, uid: 1, gid: 2,
                    mtime: TarTimestamp(seconds: 8), linkTarget: nil,
                    headerOffset: 5632, dataOffset: 6144, checksum: 0, hasPaxHeader: false)
            ]
            return ArchiveIndex(
                entries: entries, tarSize: 7168, chunkSize: 1 << 20,
                metadata: ["resourcesVersion": "3", "note": "a = b\nc ✓", "empty": ""])
        }()

        static func load32(_ bytes: [UInt8], _ at: Int) -> UInt32 { bytes[at..<at + 4].reversed().reduce(0) { $0 << 8 | UInt32($1) } }
        static func load64(_ bytes: [UInt8], _ at: Int) -> UInt64 { bytes[at..<at + 8].reversed().reduce(0) { $0 << 8 | UInt64($1) } }
        static func store32(_ bytes: inout [UInt8], _ at: Int, _ value: UInt32) {
            for i in 0..<4 { bytes[at + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt32(i))) }
        }
        static func store64(_ bytes: inout [UInt8], _ at: Int, _ value: UInt64) {
            for i in 0..<8 { bytes[at + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(i))) }
        }

        struct Tamper: CustomTestStringConvertible, Sendable {
            let name: String
            let expected: ArchiveError.Code
            let change: @Sendable (inout [UInt8]) -> Void
            var testDescription: String { name }
        }

        @Test func roundTripKeepsEveryField() throws {
            let decoded = try ArchiveIndex.decode(Self.sample.encoded())
            #expect(decoded.entries == Self.sample.entries)
            #expect(decoded.tarSize == 7168)
            #expect(decoded.chunkSize == 1 << 20)
            #expect(decoded.metadata == Self.sample.metadata)
        }

        @Test func theEntryLimitIsTheCallers() throws {
            let bytes = Self.sample.encoded()
            #expect(throws: ArchiveError.self) { try ArchiveIndex.decode(bytes, maxEntries: 4) }
            #expect(try ArchiveIndex.decode(bytes, maxEntries: 5).entries.count == 5)
        }

        @Test func theEntryCountIsHeldToTheTarStreamAndTheArchiveSize() throws {
            // Twenty records describing one and the same member: each is valid on its own, but a
            // 7168-byte tar stream has room for 14 header blocks at most.
            let entry = Self.sample.entries[4]
            let crowded = ArchiveIndex(entries: Array(repeating: entry, count: 20), tarSize: 7168, chunkSize: 1 << 20, metadata: [:])
            let error = #expect(throws: ArchiveError.self) { try ArchiveIndex.decode(crowded.encoded()) }
            #expect(error?.code == .corrupt)
            #expect(error?.message.contains("512-byte header") == true, "\(String(describing: error))")
            // One member per byte of archive at most: five members need five bytes.
            let bytes = Self.sample.encoded()
            let small = #expect(throws: ArchiveError.self) { try ArchiveIndex.decode(bytes, archiveSize: 4) }
            #expect(small?.code == .limitExceeded)
            #expect(try ArchiveIndex.decode(bytes, archiveSize: 5).entries.count == 5)
        }

        @Test func namesLongerThanTheTarParserAcceptsAreRefused() throws {
            var long = Self.sample
            // A tar stream holding such a name holds it in full, in a pax header.
            long.tarSize = 1 << 20
            long.entries[1].path = "app/" + String(repeating: "n", count: ArchiveIndex.maxNameLength)
            let error = #expect(throws: ArchiveError.self) { try ArchiveIndex.decode(long.encoded()) }
            #expect(error?.code == .corrupt)
            long.entries[1].path = "app/" + String(repeating: "n", count: ArchiveIndex.maxNameLength - 4)
            #expect(try ArchiveIndex.decode(long.encoded()).entries[1].path == long.entries[1].path)
        }

        @Test func errorsNameTheBlockOffset() throws {
            var bytes = Self.sample.encoded()
            bytes[8] = 9
            do {
                _ = try ArchiveIndex.decode(bytes, blockOffset: 4242)
                Issue.record("decoded version 9")
            } catch {
                #expect(error.offset == 4242)
                #expect(error.message.contains("9"), "the message names the version: \(error.message)")
            }
        }

        @Test func everyPrefixAndEveryByteFlipFailsCleanly() throws {
            let bytes = Self.sample.encoded()
            for length in 0..<bytes.count {
                #expect(throws: ArchiveError.self, "prefix of \(length) bytes") { try ArchiveIndex.decode(Array(bytes[0..<length])) }
            }
            // A flip either decodes (a value changed within its range) or is refused: never a crash.
            for position in 0..<bytes.count {
                for bit in [0, 7] {
                    var copy = bytes
                    copy[position] ^= 1 << bit
                    do {
                        _ = try ArchiveIndex.decode(copy)
                    } catch {
                        _ = error.code
                    }
                }
            }
        }

        // MARK: - In an archive

        /// Writes the indexed archive of `tar`, its index changed by `tamper`, to `x.tar.xz` in
        /// `dir`, and opens it.
        static func tamperedArchive(
            _ tar: [UInt8], in dir: TemporaryDirectory, tamper: (inout ArchiveIndex) -> Void
        ) async throws -> ArchiveReader {
            let path = dir.path + "/x.tar.xz"
            try await writeBytes(path, try indexedArchive(tar: tar, tamper: tamper))
            return try ArchiveReader(path: path)
        }

        @Test func anArchiveWhoseIndexDisagreesWithItsBlocksIsRefused() async throws {
            let dir = try TemporaryDirectory()
            let tar = try tarStream([tarDirectory("d"), tarFile("d/a.txt", "alpha"), tarFile("d/b.txt", "bravo")])
            let path = dir.path + "/x.tar.xz"
            try await writeBytes(path, try indexedArchive(tar: tar, tamper: { $0.tarSize += 512 }))
            let error = try #require(throws: ArchiveError.self) { try ArchiveReader(path: path) }
            #expect(error.code == .corrupt)
            #expect(error.offset != nil)

            try await writeBytes(
                path,
                try indexedArchive(
                    tar: tar,
                    index: {
                        var bytes = ArchiveIndex(
                            entries: try indexEntries(of: tar), tarSize: UInt64(tar.count), chunkSize: 1 << 20, metadata: [:]
                        ).encoded()
                        bytes[8] = 3
                        return bytes
                    }()))
            let versionError = #expect(throws: ArchiveError.self) { try ArchiveReader(path: path) }
            #expect(versionError?.code == .unsupportedVersion)
        }

        @Test func anIndexThatMisplacesAMemberFailsVerification() async throws {
            let dir = try TemporaryDirectory()
            let tar = try tarStream([tarDirectory("d"), tarFile("d/a.txt", "alpha"), tarFile("d/b.txt", "bravo")])
            // The index points b.txt's content a block further, into the end-of-archive blocks
            // (still after every member, so the entries tile the stream): a random-access read
            // parses the tar header at the indexed offset and finds that its data starts
            // elsewhere; verify compares index and headers too.
            let reader = try await Self.tamperedArchive(tar, in: dir) { index in
                index.entries[2].dataOffset += 512
            }
            #expect(reader.mode == .indexed)
            let read = await expectArchiveError("contents of a misplaced member") { try await reader.contents(of: "d/b.txt") }
            #expect(read?.code == .corrupt)
            #expect(read?.member == "d/b.txt")
            let verify = await expectArchiveError("verify") { try await reader.verify() }
            #expect(verify?.code == .corrupt)
            #expect(verify?.member == "d/b.txt")
        }

        @Test func aWrongChecksumInTheIndexIsCaught() async throws {
            let dir = try TemporaryDirectory()
            let tar = try tarStream([tarFile("a.txt", "alpha"), tarFile("b.txt", "bravo")])
            let reader = try await Self.tamperedArchive(tar, in: dir) { $0.entries[1].checksum! ^= 1 }
            #expect(try await reader.contents(of: "a.txt") == Array("alpha".utf8))
            #expect(await expectArchiveError("contents") { try await reader.contents(of: "b.txt") }?.code == .checksumMismatch)
            #expect(await expectArchiveError("verify") { try await reader.verify() }?.code == .checksumMismatch)
            let out = dir.path + "/out"
            #expect(await expectArchiveError("extract") { try await reader.extract(to: out) }?.code == .checksumMismatch)
            #expect(try await readBytes(out + "/a.txt") == Array("alpha".utf8))
            #expect(!exists(out + "/b.txt"), "the member whose checksum failed is removed")
        }

        @Test func anIndexListingMoreMembersThanTheTarHoldsFailsVerification() async throws {
            let dir = try TemporaryDirectory()
            let tar = try tarStream([tarFile("a.txt", "alpha")])
            let reader = try await Self.tamperedArchive(tar, in: dir) { index in
                // A second entry in the end-of-archive blocks, where tar sees no member.
                var extra = index.entries[0]
                extra.path = "ghost.txt"
                extra.headerOffset = 1024
                extra.dataOffset = 1536
                extra.size = 0
                index.entries.append(extra)
            }
            #expect(try await reader.entries().count == 2)
            let error = await expectArchiveError("verify") { try await reader.verify() }
            #expect(error?.code == .corrupt)
        }

        /// A member after tar's end-of-archive marker, which the index lists: tar, a full
        /// extraction and a pipe's reading never reach it, and a selection and a pipe trusted the
        /// index (the pipe passed over the index, behind the bytes after the marker, unchecked).
        /// Members follow each other, so an entry with room for the marker before it is damage,
        /// from a file and from a pipe alike.
        @Test func aMemberListedPastTheEndOfArchiveMarkerIsDamage() async throws {
            let dir = try TemporaryDirectory()
            let benign = tarFile("a", "benign\n")
            let evil = tarFile("evil", "EVIL\n", mode: 0o755)
            let tar = try tarStream([benign]) + (try tarStream([evil]))
            let path = dir.path + "/x.tar.xz"
            try await writeBytes(
                path,
                try indexedArchive(tar: tar, describing: try tarStream([benign, evil])) { index in
                    index.entries[1].headerOffset += UInt64(TarEncoder.endOfArchive.count)
                    index.entries[1].dataOffset += UInt64(TarEncoder.endOfArchive.count)
                })
            let opened = await expectArchiveError("open") { try ArchiveReader(path: path) }
            #expect(opened?.code == .corrupt, "\(String(describing: opened))")
            #expect(opened?.message.contains("room for a zero block") == true, "\(String(describing: opened))")
            let selected = await expectArchiveError("a selection") {
                let reader = try await ArchiveReader.open(path: path, selecting: MemberFilter(["evil"]))
                return try await reader.extract(to: dir.path + "/out")
            }
            #expect(selected?.code == .corrupt)
            #expect(!exists(dir.path + "/out/evil"))
            var fds: [Int32] = [-1, -1]
            try #require(pipe(&fds) == 0)
            let (readEnd, writeEnd) = (fds[0], fds[1])
            let bytes = try await readBytes(path)
            async let fed: Void = offPool {
                defer { close(writeEnd) }
                _ = bytes.withUnsafeBytes { write(writeEnd, $0.baseAddress, $0.count) }
            }
            let piped = await expectArchiveError("a pipe") { try await ArchiveStreamReader.scan(from: readEnd) }
            close(readEnd)
            try await fed
            #expect(piped?.code == .corrupt, "\(String(describing: piped))")
        }

        /// A tar member hidden in a file's content, and an index entry pointing at it under the
        /// name of the real member after it: a selection trusting the index extracted the hidden
        /// content, which tar and a full extraction never see. Members tile the tar stream, so an
        /// entry that begins inside the content before it is damage, refused when the index is
        /// read (for a selection too).
        @Test(arguments: [false, true])
        func anEntryBeginningInsideTheContentBeforeItIsRefused(selecting: Bool) async throws {
            let dir = try TemporaryDirectory()
            let hidden = try tarStream([tarFile("d/config", "EVIL\n")], end: false)
            let hiddenChecksum = try indexEntries(of: try tarStream([tarFile("d/config", "EVIL\n")]))[0].checksum
            var carrier = tarFile("d/carrier.bin", "")
            carrier.0.size = UInt64(hidden.count)
            carrier.1 = hidden
            let tar = try tarStream([tarDirectory("d"), carrier, tarFile("d/config", "real\n")])
            let path = dir.path + "/x.tar.xz"
            try await writeBytes(
                path,
                try indexedArchive(tar: tar) { index in
                    let inside = index.entries[1].dataOffset
                    index.entries[2].headerOffset = inside
                    index.entries[2].dataOffset = inside + 512
                    index.entries[2].size = 5
                    index.entries[2].checksum = hiddenChecksum
                })
            let error = await expectArchiveError("open") {
                if selecting {
                    let reader = try await ArchiveReader.open(path: path, selecting: MemberFilter(["d/config"]))
                    _ = try await reader.extract(to: dir.path + "/out")
                } else {
                    _ = try ArchiveReader(path: path)
                }
            }
            #expect(error?.code == .corrupt, "\(String(describing: error))")
            #expect(
                error?.message.contains("entry 2 begins at tar offset 1024, inside the content of the entry before it (which ends at 2048)")
                    == true, "\(String(describing: error))")
            #expect(!exists(dir.path + "/out/d/config"))
        }

        /// Index metadata keys are judged on their bytes too: a key stored twice, in the same
        /// bytes or in canonically equivalent ones, is damage (no writer repeats one), where a
        /// `[String: String]` would keep one of the values silently.
        @Test(arguments: ["caf\u{E9}", "cafe\u{301}"])
        func aRepeatedMetadataKeyIsRefused(second: String) throws {
            var bytes = ArchiveIndex.encodedMetadata(["caf\u{E9}": "1"])
            let first = bytes.count
            for part in [second, "2"] {
                bytes.appendLE(UInt32(part.utf8.count))
                bytes.append(contentsOf: Array(part.utf8))
            }
            let error = try #require(throws: ArchiveError.self) { try ArchiveIndex.decodeMetadata(bytes, 0..<bytes.count, blockOffset: 0) }
            #expect(error.code == .corrupt)
            // `==` on strings would call the two forms equal: the bytes decide.
            let same = Array(second.utf8) == Array("caf\u{E9}".utf8)
            #expect(error.message.contains(same ? "appears twice" : "read as one key"), "\(error.message)")
            #expect(try ArchiveIndex.decodeMetadata(bytes, 0..<first, blockOffset: 0)["caf\u{E9}"] == "1")
        }
    }
}
