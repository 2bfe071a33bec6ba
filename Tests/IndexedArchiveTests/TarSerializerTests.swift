import Foundation
import Tar
import TestSupport
import Testing

@testable import IndexedArchive

extension EngineSuites {
    @Suite(.background) struct TarSerializerTests {
        static let mib = 1 << 20

        /// Serialises `count` bytes of content as one raw run and ends the stream.
        static func chunks(count: Int, chunkSize: Int, workers: Int) -> (chunks: [Chunk], stream: [UInt8]) {
            var serializer = TarSerializer(chunkSize: chunkSize, workers: workers)
            let bytes = sampleBytes(count: count, seed: 9, text: true)
            var ready: [Chunk] = []
            serializer.append(bytes, into: &ready)
            _ = serializer.finish(into: &ready)
            return (ready, bytes + TarEncoder.endOfArchive)
        }

        static func expectContiguous(_ chunks: [Chunk], _ stream: [UInt8]) {
            #expect(chunks.map(\.sequence) == Array(0..<chunks.count), "numbered in stream order")
            #expect(chunks.flatMap(\.bytes) == stream, "the chunks are the stream, cut")
        }

        /// Extended attributes whose pax header a reader would refuse (over 1 MiB: 18 values of
        /// 60 KB, which tmpfs and XFS allow) are refused before anything of the member is stored:
        /// the pack exited 0 with an archive whose extraction stopped at that member and lost
        /// every member after it. Just under the limit is stored, and reads back.
        @Test func aPaxHeaderAReaderWouldRefuseIsRefused() throws {
            var serializer = TarSerializer(chunkSize: Self.mib, workers: 1)
            var ready: [Chunk] = []
            var header = TarHeader(path: "f", kind: .regular, size: 0)
            header.extendedAttributeList = (0..<18).map {
                ExtendedAttribute(name: "user.a\($0)", value: Array(repeating: 7, count: 60_000))
            }
            let error = try #require(throws: ArchiveError.self) { try serializer.beginMember(header, into: &ready) }
            #expect(error.code == .invalidArchivePath && error.member == "f", "\(error)")
            #expect(error.message.contains("18 extended attributes") && error.message.contains("--xattrs"), "\(error.message)")
            #expect(serializer.position == 0 && ready.isEmpty, "nothing of it stored")

            header.extendedAttributeList.removeLast()
            try serializer.beginMember(header, into: &ready)
            serializer.endMember(checksum: 0, into: &ready)
            _ = serializer.finish(into: &ready)
            var parser = TarParser()
            var attributes = 0
            for chunk in ready {
                try chunk.bytes.withUnsafeBytes { bytes in
                    try parser.consume(bytes) { event in
                        if case .member(let member) = event { attributes = member.header.extendedAttributeList.count }
                    }
                }
            }
            #expect(attributes == 17)
        }

        /// Issue #12, the tail: the last full chunk and the short one after it are cut into
        /// pieces for every worker, so no core idles while another compresses the last 16 MiB.
        @Test func theFinalStretchIsCutForEveryWorker() {
            let (chunks, stream) = Self.chunks(count: 6 * Self.mib + 1000, chunkSize: 4 * Self.mib, workers: 2)
            Self.expectContiguous(chunks, stream)
            #expect(chunks.count == 4, "2 * workers pieces: \(chunks.map(\.bytes.count))")
            let sizes = chunks.map(\.bytes.count)
            #expect(sizes.max()! <= 2 * sizes.min()!, "pieces of about equal size: \(sizes)")
            #expect(sizes.allSatisfy { $0 >= TarSerializer.minimumTailPiece && $0 <= 4 * Self.mib }, "\(sizes)")
        }

        /// A chunk's array, given back to the pool once compressed, carries a later chunk: the
        /// pack maps no fresh memory for it, and the stream comes out the same.
        @Test func aCompressedChunksArrayCarriesALaterOne() throws {
            let chunkSize = 256 << 10
            let pool = ByteArrayPool(limit: 4, smallest: chunkSize)
            var serializer = TarSerializer(chunkSize: chunkSize, workers: 1, buffers: pool)
            let bytes = sampleBytes(count: 5 * chunkSize + 999, seed: 3, text: true)
            var all: [Chunk] = []
            var ready: [Chunk] = []
            bytes.withUnsafeBytes { raw in
                serializer.append(UnsafeRawBufferPointer(rebasing: raw[..<(2 * chunkSize + 10)]), into: &ready)
            }
            try #require(ready.count == 1 && ready[0].sequence == 0)
            let first = ready.removeFirst()
            let storage = first.bytes.withUnsafeBytes { $0.baseAddress }
            all.append(Chunk(sequence: first.sequence, bytes: first.bytes.map { $0 }, stored: first.stored))  // a copy
            pool.recycle(first.bytes)
            _ = consume first
            bytes.withUnsafeBytes { raw in
                serializer.append(UnsafeRawBufferPointer(rebasing: raw[(2 * chunkSize + 10)...]), into: &ready)
            }
            _ = serializer.finish(into: &ready)
            let reused = try #require(ready.first { $0.sequence == 3 })
            #expect(reused.bytes.withUnsafeBytes { $0.baseAddress } == storage)
            #expect(pool.reuses.load(ordering: .relaxed) == 1)
            all += ready
            Self.expectContiguous(all, bytes + TarEncoder.endOfArchive)
        }

        @Test func earlierChunksKeepTheChunkSize() {
            let (chunks, stream) = Self.chunks(count: 13 * Self.mib, chunkSize: 4 * Self.mib, workers: 2)
            Self.expectContiguous(chunks, stream)
            #expect(chunks.prefix(2).allSatisfy { $0.bytes.count == 4 * Self.mib }, "\(chunks.map(\.bytes.count))")
            #expect(chunks.count == 2 + 4)
        }

        @Test func oneWorkerOrAShortStretchIsNotCut() {
            let (single, stream) = Self.chunks(count: 6 * Self.mib, chunkSize: 4 * Self.mib, workers: 1)
            Self.expectContiguous(single, stream)
            #expect(single.map(\.bytes.count) == [4 * Self.mib, 2 * Self.mib + 1024])

            // 1 MiB chunks: the stretch (under 2 MiB) has no room for more 1 MiB pieces than chunks.
            let (short, shortStream) = Self.chunks(count: Self.mib + 5000, chunkSize: Self.mib, workers: 2)
            Self.expectContiguous(short, shortStream)
            #expect(short.map(\.bytes.count) == [Self.mib, 5000 + 1024])

            // An archive smaller than one chunk has no tail to balance.
            let (small, smallStream) = Self.chunks(count: 3 * Self.mib, chunkSize: 4 * Self.mib, workers: 2)
            Self.expectContiguous(small, smallStream)
            #expect(small.count == 1)
        }

        /// Issue #12, tar overhead: an ordinary member is one 512-byte ustar header, its
        /// nanoseconds kept for the index only; a time ustar cannot hold still goes to pax whole.
        @Test func nanosecondsStayInTheIndexNotInAPaxHeader() throws {
            var serializer = TarSerializer(chunkSize: Self.mib)
            var ready: [Chunk] = []
            let time = TarTimestamp(seconds: 1_600_000_123, nanoseconds: 456_789)
            try serializer.beginMember(
                TarHeader(path: "a.txt", kind: .regular, size: 3, mode: 0o644, uid: 1, gid: 1, mtime: time),
                into: &ready)
            serializer.append(Array("abc".utf8), into: &ready)
            serializer.endMember(checksum: 7, into: &ready)

            let early = TarTimestamp(seconds: -5, nanoseconds: 7)
            try serializer.beginMember(
                TarHeader(path: "old.txt", kind: .regular, size: 0, mode: 0o644, uid: 1, gid: 1, mtime: early),
                into: &ready)
            serializer.endMember(checksum: 0, into: &ready)
            let entries = try ArchiveIndex.decode(serializer.finish(into: &ready).richIndex(chunkSize: 1 << 20, metadata: [:])).entries
            #expect(entries[0].mtime == time, "the index keeps the nanoseconds")
            #expect(entries[0].hasPaxHeader == false)
            #expect(entries[0].dataOffset == 512, "no pax header before the ustar block")
            #expect(entries[0].checksum == 7)
            #expect(entries[1].hasPaxHeader, "a time before 1970 does not fit ustar")
            #expect(
                TarSerializer.tarHeader(for: TarHeader(path: "x", kind: .regular, size: 0, mode: 0, uid: 0, gid: 0, mtime: early)).mtime
                    == early)

            #expect(TarSerializer.tarTime(TarTimestamp(seconds: 1_600_000_123), matches: time))
            #expect(TarSerializer.tarTime(time, matches: time), "archives written before keep the pax mtime")
            #expect(!TarSerializer.tarTime(TarTimestamp(seconds: 1_600_000_124), matches: time))
        }

        /// The serializer codes each member for the indexes as it goes rather than keeping every
        /// entry to the end: what it codes must be, byte for byte, what the whole list of entries
        /// gives (the rich index and pixz's), checksums (known only once a member's content is
        /// stored) and members gathered apart in stored blocks included.
        @Test(arguments: [false, true])
        func theIndexesCodedAsMembersComeAreThoseOfTheWholeList(_ gathered: Bool) throws {
            var serializer = TarSerializer(chunkSize: 64 << 10, workers: 2)
            var ready: [Chunk] = []
            var expected: [ArchiveEntry] = []
            var apart: [ArchiveEntry] = []
            for index in 0..<300 {
                let kind: TarEntryKind = index % 50 == 0 ? .directory : (index % 31 == 5 ? .symbolicLink : .regular)
                let goesApart = gathered && index % 7 == 3 && kind == .regular
                let size = kind == .regular ? UInt64(index * 37 % 2000) : 0
                let name = index % 23 == 4 ? "dir\(index / 50)/._note\(index)" : "dir\(index / 50)/file-\(index).txt"
                var header = TarHeader(
                    path: kind == .directory ? "dir\(index / 50)/" : name, kind: kind, size: size, mode: 0o644,
                    uid: UInt64(index % 3), gid: 20,
                    mtime: TarTimestamp(seconds: 1_700_000_000 - Int64(index % 5) * 86_400, nanoseconds: UInt32(index)))
                if kind == .symbolicLink { header.linkTarget = "file-\(index - 1).txt" }
                let start = serializer.position
                try serializer.beginMember(header, incompressible: goesApart, into: &ready)
                serializer.append([UInt8](repeating: UInt8(index % 251), count: Int(size)), into: &ready)
                let checksum = UInt64(index) &* 0x9E37_79B9_7F4A_7C15
                serializer.endMember(checksum: checksum, into: &ready)
                let entry = ArchiveEntry(
                    path: header.path, kind: kind, size: size, mode: 0o644, uid: header.uid, gid: 20, mtime: header.mtime,
                    linkTarget: header.linkTarget, headerOffset: start, dataOffset: start + 512,
                    checksum: kind == .regular ? checksum : nil, hasPaxHeader: false)
                // Members gathered apart join the stream later, where it is when they are
                // flushed: their offsets are not known here.
                if goesApart { apart.append(entry) } else { expected.append(entry) }
            }
            let recorded = serializer.finish(into: &ready)
            let decoded = try ArchiveIndex.decode(recorded.richIndex(chunkSize: 64 << 10, metadata: ["k": "v"])).entries
            #expect(recorded.count == 300)
            #expect(decoded.count == 300)
            if gathered {
                let apartPaths = Set(apart.map(\.path))
                #expect(apart.count > 20)
                #expect(decoded.filter { !apartPaths.contains($0.path) } == expected)
                #expect(decoded.filter { apartPaths.contains($0.path) }.map(\.checksum) == apart.map(\.checksum))
            } else {
                #expect(decoded == expected)
            }
            let whole = ArchiveIndex(entries: decoded, tarSize: serializer.position, chunkSize: 64 << 10, metadata: ["k": "v"])
            #expect(recorded.richIndex(chunkSize: 64 << 10, metadata: ["k": "v"]) == whole.encoded())
            #expect(recorded.pixzIndex() == PixzIndex.encode(entries: decoded, tarSize: serializer.position))
            #expect(decoded.map(\.headerOffset) == decoded.map(\.headerOffset).sorted(), "the index is in stream order")
        }

        /// A packed tree: only the members with a field ustar cannot hold carry a pax header, and
        /// amk's own extraction still restores every nanosecond (from the index).
        @Test func aPackedTreeHasPaxHeadersOnlyWhereUstarFallsShort() async throws {
            let packed = try await PackedTree.make()
            let entries = try await ArchiveReader(path: packed.archive).entries()
            func fits(_ text: String?) -> Bool { (text ?? "").utf8.count <= 100 && (text ?? "").utf8.allSatisfy { $0 < 0x80 } }
            let plain = entries.filter { fits($0.path) && fits($0.linkTarget) && $0.uid <= 0o7777777 && $0.gid <= 0o7777777 }
            #expect(plain.count >= 10, "the tree has ordinary members")
            #expect(plain.filter(\.hasPaxHeader).map(\.path) == [], "ordinary members need no pax header")
            #expect(entries.contains { $0.hasPaxHeader }, "long and non-ASCII names still get one")
            #expect(plain.contains { $0.mtime.nanoseconds != 0 }, "the index has the nanoseconds")

            let out = packed.dir.path + "/out"
            try await ArchiveReader(path: packed.archive).extract(to: out)
            expectSameTree(
                try await TreeSnapshot.of(packed.root).droppingSetIDBits(), try await TreeSnapshot.of(out + "/src"),
                "nanosecond times restored from the index")
        }
    }
}
