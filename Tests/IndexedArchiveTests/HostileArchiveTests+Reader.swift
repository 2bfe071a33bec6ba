import ArchiveTestSupport
import Foundation
import IndexedArchive
import Tar
import Testing
import XZ

/// Hostile archives aimed at the reader itself (issue #10, points 3, 4 and 7): every layer below
/// the one attacked is consistent (valid checks, a valid xz Index, an AMKINDEX and a pixz index
/// that agree), so nothing but the reader's own rules stands in the way.
extension EngineSuites.HostileArchiveTests {
    // MARK: - Declared sizes: no arithmetic traps, no allocation sized from the file

    @Test func aBlockDeclaringAPebibyteFailsCleanly() async throws {
        let scene = try Scene()
        let tar = try tarStream([tarFile("a.txt", "alpha")])
        // The block header declares no sizes; the xz Index and the AMKINDEX agree on 2^50 bytes.
        var block = try Craft.withoutSizes(try Craft.block(tar))
        block.indexedSize = 1 << 50
        try await writeBytes(scene.archive, try Craft.archive(dataBlocks: [block], entries: try indexEntries(of: tar), tarSize: 1 << 50))
        let reader = try ArchiveReader(path: scene.archive)
        #expect(reader.mode == .indexed)
        let verify = await expectArchiveError("verify") { try await reader.verify() }
        #expect(verify?.code == .corrupt)
        #expect(verify?.offset == UInt64(StreamHeader.size), "names the block: \(String(describing: verify))")
        #expect(verify?.message.contains("\(1 << 50)") == true, "\(String(describing: verify))")
        let extract = await expectArchiveError("extract") { try await reader.extract(to: scene.dest) }
        #expect(extract?.code == .corrupt)
        // Random access decodes only what the member needs, and its checksum vouches for it.
        #expect(try await reader.contents(of: "a.txt") == Array("alpha".utf8))
        try await scene.expectNothingEscaped()
    }

    @Test func memberSizesNearTwoToTheSixtyThreeDoNotTrap() async throws {
        let scene = try Scene()
        let tar = try tarStream([tarFile("a.txt", "alpha"), tarFile("b.txt", "bravo")])
        let tarSize: UInt64 = (1 << 63) - (1 << 20)
        var block = try Craft.withoutSizes(try Craft.block(tar))
        block.indexedSize = tarSize
        var entries = try indexEntries(of: tar)
        // Both huge: a.txt's content would cover b.txt, which the index's own check refuses.
        entries[0].size = 1 << 62
        entries[1].size = 1 << 62
        try await writeBytes(scene.archive, try Craft.archive(dataBlocks: [block], entries: entries, tarSize: tarSize))
        let overlapping = #expect(throws: ArchiveError.self) { try ArchiveReader(path: scene.archive) }
        #expect(overlapping?.code == .corrupt)
        #expect(overlapping?.message.contains("inside the content of the entry before it") == true, "\(String(describing: overlapping))")
        // The last one huge: the reading itself must refuse it.
        entries[0] = try indexEntries(of: tar)[0]
        try await writeBytes(scene.archive, try Craft.archive(dataBlocks: [block], entries: entries, tarSize: tarSize))
        let reader = try ArchiveReader(path: scene.archive)
        #expect(reader.mode == .indexed)
        var options = ExtractOptions()
        options.members = ["a.txt", "b.txt"]
        let both = await expectArchiveError("extract both") { try await reader.extract(to: scene.dest, options: options) }
        #expect(both?.code == .corrupt)
        options.members = ["b.txt"]
        let one = await expectArchiveError("extract one") { try await reader.extract(to: scene.dest, options: options) }
        #expect(one?.code == .corrupt)
        let read = await expectArchiveError("read") { try await reader.read(member: "b.txt") { _ in } }
        #expect(read?.code == .corrupt)
        #expect(listing(scene.dest).isEmpty, "nothing extracted: \(listing(scene.dest))")
    }

    // MARK: - Small inputs, huge memory: limits proportional to the archive

    /// A 64-byte AMKINDEX header listing `count` entries, followed by zeros up to `chunks` × 1 MiB:
    /// all-zero records, each valid on its own, at about 150 bytes of file per MiB.
    static func zeroIndex(count: UInt64, tarSize: UInt64, chunks: Int) throws -> CraftedBlock {
        var header = ArchiveIndex(entries: [], tarSize: tarSize, chunkSize: 1 << 20, metadata: [:]).encoded()
        header.replaceSubrange(16..<24, with: Craft.le(count))
        return try Craft.zeroBlock(chunks: chunks, prefix: header)
    }

    @Test func anIndexOfManyEmptyRecordsIsRefusedBeforeItIsDecoded() async throws {
        let scene = try Scene()
        // 150,000 records in a 20 KB file, over an 80 MiB tar stream of zeros (room for 163,840
        // headers): nothing but the archive's size says the count is a lie.
        let tarSize = UInt64(80 << 20)
        let data = try Craft.zeroBlock(chunks: 80)
        let index = try Self.zeroIndex(count: 150_000, tarSize: tarSize, chunks: 14)
        let bytes = try Craft.archive(dataBlocks: [data], entries: [], tarSize: tarSize, richIndex: index)
        #expect(bytes.count < 150_000 / 4)
        try await writeBytes(scene.archive, bytes)
        let error = await expectArchiveError("open") { try ArchiveReader(path: scene.archive) }
        #expect(error?.code == .limitExceeded)
        #expect(error?.message.contains("more than an archive of \(bytes.count) bytes can hold") == true, "\(String(describing: error))")
        #expect(error?.path == scene.archive)
    }

    @Test func anIndexBlockLargerThanTheArchiveCanHonestlyHoldIsRefused() async throws {
        let scene = try Scene()
        let tar = try tarStream([tarFile("a.txt", "alpha")])
        // An index of no entries padded with 18 MiB of zeros, in a file of a few kilobytes.
        let index = try Self.zeroIndex(count: 0, tarSize: UInt64(tar.count), chunks: 18)
        let bytes = try Craft.archive(dataBlocks: [try Craft.block(tar)], entries: [], tarSize: UInt64(tar.count), richIndex: index)
        try await writeBytes(scene.archive, bytes)
        let error = await expectArchiveError("open") { try ArchiveReader(path: scene.archive) }
        #expect(error?.code == .limitExceeded)
        #expect(error?.message.contains("exceeds the limit of \(16 << 20)") == true, "\(String(describing: error))")
        // A caller who trusts the file can raise the limit.
        #expect(try ArchiveReader(path: scene.archive, maxIndexBytes: 32 << 20).mode == .indexed)
        #expect(ArchiveReader.indexAllowance(fileSize: 1000) == 16 << 20)
        #expect(ArchiveReader.indexAllowance(fileSize: 1 << 20) == 256 << 20)
        #expect(ArchiveReader.indexAllowance(fileSize: .max) == ArchiveReader.defaultMaxIndexBytes)
    }

    @Test func aStreamedIndexIsHeldToTheStreamsSize() async throws {
        let scene = try Scene()
        let tar = try tarStream([tarFile("a.txt", "alpha")])
        // 36 MiB of zeros after the tar stream, in a stream of a few kilobytes: more than twice
        // the 16 MiB an archive of that size may carry as its index.
        let index = try Self.zeroIndex(count: 1, tarSize: UInt64(tar.count), chunks: 36)
        let bytes = try Craft.archive(
            dataBlocks: [try Craft.block(tar)], entries: try indexEntries(of: tar),
            tarSize: UInt64(tar.count), richIndex: index)
        let error = await expectArchiveError("stream") { try await ArchiveStreamReaderTests.extract(bytes, to: scene.dest) }
        #expect(error?.code == .limitExceeded, "\(String(describing: error))")
    }

    @Test(.enabled(if: toolExists("xz")))
    func aForeignArchiveAskingForAHugeDictionaryIsRefused() async throws {
        // The decoder touches its whole dictionary once the output passes its size: a header
        // asking for 256 MiB (1.5 GiB is possible) would cost that much for a small file.
        let scene = try Scene()
        let tar = try tarStream([tarFile("a.txt", "alpha")])
        let result = try await runTool(["xz", "-c", "--lzma2=preset=0,dict=256MiB"], stdin: tar)
        try await writeBytes(scene.archive, result.stdout)
        let reader = try ArchiveReader(path: scene.archive)
        #expect(reader.mode == .sequential)
        let error = await expectArchiveError("entries") { try await reader.entries() }
        #expect(error?.code == .limitExceeded, "\(String(describing: error))")
        let stream = await expectArchiveError("stream") { try await ArchiveStreamReaderTests.extract(result.stdout, to: scene.dest) }
        #expect(stream?.code == .limitExceeded, "\(String(describing: stream))")
        // A caller who trusts the file can allow more.
        #expect(try await ArchiveReader(path: scene.archive, maxDecoderMemory: 512 << 20).entries().map(\.path) == ["a.txt"])
    }

    // MARK: - Random access trusts the tar headers, not the index alone

    /// `tar` in our layout with its index changed by `tamper`, extracted by random access
    /// (a selection of `members`, which `amk extract A MEMBER` makes).
    func extractSelection(
        _ tar: [UInt8], _ members: Set<String>, scene: Scene,
        tamper: (inout ArchiveIndex) -> Void
    ) async throws -> ArchiveError? {
        try await writeBytes(scene.archive, try indexedArchive(tar: tar, tamper: tamper))
        var options = ExtractOptions()
        options.members = members
        // Refused when opened (an index whose entries leave room for a zero block between them)
        // or when extracted.
        return await expectArchiveError("extract \(members)") {
            let reader = try ArchiveReader(path: scene.archive)
            #expect(reader.mode == .indexed)
            return try await reader.extract(to: scene.dest, options: options)
        }
    }

    static let pair = [tarFile("a.txt", "alpha"), tarFile("b.txt", "bravo"), tarFile("c.txt", String(repeating: "c", count: 5000))]

    @Test func anIndexThatSwapsNamesCannotWriteAnotherMembersBytes() async throws {
        let scene = try Scene()
        // Entry 0 (a.txt's header and data, with a.txt's checksum) is listed as b.txt.
        let error = try await extractSelection(try tarStream(Self.pair), ["b.txt"], scene: scene) { index in
            index.entries[0].path = "b.txt"
            index.entries[1].path = "a.txt"
        }
        #expect(error?.code == .corrupt)
        #expect(error?.member == "b.txt")
        #expect(error?.offset == 0, "names the header's offset: \(String(describing: error))")
        #expect(error?.message.contains("\"a.txt\"") == true, "\(String(describing: error))")
        #expect(!exists(scene.dest + "/b.txt") && !exists(scene.dest + "/a.txt"))
        try await scene.expectNothingEscaped()
    }

    @Test func anIndexCannotMakeALinkTheHeaderDoesNotDescribe() async throws {
        let scene = try Scene()
        let target = scene.outside
        let error = try await extractSelection(try tarStream(Self.pair), ["b.txt"], scene: scene) { index in
            index.entries[1].kind = .symbolicLink
            index.entries[1].linkTarget = target
        }
        #expect(error?.code == .corrupt)
        #expect(!exists(scene.dest + "/b.txt"), "no link was made")
        try await scene.expectNothingEscaped()
    }

    @Test func anIndexCannotAddSetIDBits() async throws {
        let scene = try Scene()
        let error = try await extractSelection(try tarStream(Self.pair), ["a.txt"], scene: scene) { index in
            index.entries[0].mode = 0o4755
        }
        #expect(error?.code == .corrupt)
        #expect(error?.message.contains("mode 644") == true, "\(String(describing: error))")
        #expect(!exists(scene.dest + "/a.txt"))
    }

    @Test func anIndexCannotMoveAMembersDataOrResizeIt() async throws {
        let scene = try Scene()
        let tar = try tarStream(Self.pair)
        let moved = try await extractSelection(tar, ["c.txt"], scene: scene) { index in
            index.entries[2].dataOffset += 512
            index.entries[2].size -= 512
        }
        #expect(moved?.code == .corrupt)
        let resized = try await extractSelection(tar, ["a.txt"], scene: scene) { index in
            index.entries[0].size = 3
        }
        #expect(resized?.code == .corrupt)
        // An index pointing into the middle of a member's data finds no header there.
        let inside = try await extractSelection(tar, ["c.txt"], scene: scene) { index in
            index.entries[2].headerOffset += 512
            index.entries[2].dataOffset += 512
            index.entries[2].size = 512
        }
        #expect(inside?.code == .corrupt)
        #expect(listing(scene.dest).isEmpty, "\(listing(scene.dest))")
    }

    @Test func aSelectedMemberWhoseChecksumFailsIsRemoved() async throws {
        let scene = try Scene()
        let error = try await extractSelection(try tarStream(Self.pair), ["b.txt"], scene: scene) { index in
            index.entries[1].checksum! ^= 1
        }
        #expect(error?.code == .checksumMismatch)
        #expect(!exists(scene.dest + "/b.txt"), "the member whose checksum failed is removed")
    }

    @Test func ofMembersSharingAPathTheLastOneWins() async throws {
        let scene = try Scene()
        let tar = try tarStream([
            tarFile("dup.txt", "first"), tarFile("other.txt", String(repeating: "o", count: 9000)),
            tarFile("dup.txt", "second", mode: 0o600)
        ])
        try await writeBytes(scene.archive, try indexedArchive(tar: tar))
        let reader = try ArchiveReader(path: scene.archive)
        #expect(try await reader.contents(of: "dup.txt") == Array("second".utf8))
        #expect(try await reader.entry(named: "dup.txt")?.mode == 0o600)
        var options = ExtractOptions()
        options.members = ["dup.txt"]
        try await reader.extract(to: scene.dest, options: options)
        #expect(try await readBytes(scene.dest + "/dup.txt") == Array("second".utf8))
        #expect(listing(scene.dest) == ["dup.txt"])
        let full = scene.base.path + "/full"
        try await reader.extract(to: full)
        #expect(try await readBytes(full + "/dup.txt") == Array("second".utf8), "a full extraction agrees")
    }

    @Test func membersWithPaxHeadersAreReadByRandomAccess() async throws {
        // Names past 100 bytes and non-ASCII names have a pax header before the ustar block: the
        // index points at the pax header, and the path comes from it.
        let packed = try await PackedTree.make()
        let reader = try ArchiveReader(path: packed.archive)
        let names = [
            "src/\(CompatTree.over255)", "src/long-link", "src/ünïcödé-名前.txt", "src/setuid-tool", "src/docs/big.json",
            "src/emoji-🎉"
        ]
        for name in names {
            let entry = try #require(try await reader.entry(named: name))
            var options = ExtractOptions()
            options.members = [name]
            let out = packed.dir.path + "/one-\(names.firstIndex(of: name)!)"
            let summary = try await reader.extract(to: out, options: options)
            #expect(summary.entries >= 1, "\(name)")
            let relative = String(entry.name.dropFirst("src/".count))
            // Extraction drops set-id bits when ownership is not restored.
            let original = try TreeSnapshot(packed.root).droppingSetIDBits().items[relative]
            let extracted = try TreeSnapshot(out + "/src").items[relative]
            #expect(original != nil && original == extracted, "\(name): \(original?.brief ?? "-") vs \(extracted?.brief ?? "-")")
        }
    }
}
