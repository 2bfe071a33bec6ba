import Tar
import TestSupport
import Testing

@testable import IndexedArchive

extension EngineSuites {
    /// Version 1 of the rich index, which archives written before version 2 carry: its layout,
    /// and the damage a reader must refuse in it.
    @Suite struct ArchiveIndexVersion1Tests {
        static let sample = ArchiveIndexTests.sample
        typealias Tamper = ArchiveIndexTests.Tamper

        @Test func layoutIsTheDocumentedOne() throws {
            let bytes = Self.sample.encodedVersion1()
            let entries = Self.sample.entries
            #expect(Array(bytes[0..<8]) == Array("AMKINDEX".utf8))
            #expect(bytes[8] == 1 && bytes[9] == 0, "major version 1")
            #expect(ArchiveIndexTests.load32(bytes, 12) == 96, "record size")
            #expect(ArchiveIndexTests.load64(bytes, 16) == UInt64(entries.count))
            #expect(ArchiveIndexTests.load64(bytes, 24) == 7168, "tar size T")
            #expect(ArchiveIndexTests.load64(bytes, 32) == 1 << 20, "chunk size C")
            let heap = entries.reduce(0) { $0 + $1.path.utf8.count + ($1.linkTarget?.utf8.count ?? 0) }
            #expect(ArchiveIndexTests.load64(bytes, 40) == UInt64(heap), "string heap size")
            #expect(bytes[48] == 1 && bytes[49] == 8, "CRC64, 8 bytes")
            let metadataSize = Int(ArchiveIndexTests.load32(bytes, 52))
            #expect(bytes.count == 64 + 96 * entries.count + heap + metadataSize)
            // Record 1: the regular file.
            let r = 64 + 96
            #expect(ArchiveIndexTests.load64(bytes, r) == 1536)
            #expect(ArchiveIndexTests.load64(bytes, r + 8) == 2560)
            #expect(ArchiveIndexTests.load64(bytes, r + 16) == 700)
            #expect(ArchiveIndexTests.load32(bytes, r + 36) == 0o4755)
            #expect(bytes[r + 48] == UInt8(ascii: "0"))
            #expect(bytes[r + 49] & 1 == 1, "has a pax header")
            #expect(ArchiveIndexTests.load64(bytes, r + 80) == 0xDEAD_BEEF_0123_4567)
            let pathLength = Int(ArchiveIndexTests.load32(bytes, r + 52))
            let pathOffset = Int(ArchiveIndexTests.load64(bytes, r + 56))
            let heapStart = 64 + 96 * entries.count
            #expect(Array(bytes[heapStart + pathOffset..<heapStart + pathOffset + pathLength]) == Array("app/ünïcödé-名前.txt".utf8))
            // Record 2: the symlink's type and target.
            let s = 64 + 2 * 96
            #expect(bytes[s + 48] == UInt8(ascii: "2"))
            #expect(ArchiveIndexTests.load32(bytes, s + 72) == 303)
        }

        @Test func largeIdsAreClampedInTheRecord() throws {
            var index = Self.sample
            index.entries[0].uid = 1 << 40
            let decoded = try ArchiveIndex.decode(index.encodedVersion1())
            #expect(decoded.entries[0].uid == UInt64(UInt32.max))
        }

        @Test func laterMinorVersionsWithLongerRecordsStillDecode() throws {
            // A future writer appends 32 bytes to every record and bumps the minor version: readers
            // stride by the record size and ignore the new fields.
            let old = Self.sample.encodedVersion1()
            let n = Self.sample.entries.count
            var bytes = Array(old[0..<64])
            bytes[10] = 3
            ArchiveIndexTests.store32(&bytes, 12, 128)
            for i in 0..<n {
                bytes += old[64 + i * 96..<64 + (i + 1) * 96]
                bytes += [UInt8](repeating: 0xAB, count: 32)
            }
            bytes += old[(64 + n * 96)...]
            let decoded = try ArchiveIndex.decode(bytes)
            #expect(decoded.entries == Self.sample.entries)
            #expect(decoded.metadata == Self.sample.metadata)
        }

        static let r0 = 64, r1 = 64 + 96
        static let tampers: [Tamper] = [
            Tamper(name: "wrong magic", expected: .corrupt) { $0[0] = UInt8(ascii: "X") },
            Tamper(name: "header cut short", expected: .corrupt) { $0 = Array($0[0..<40]) },
            Tamper(name: "unknown major version", expected: .unsupportedVersion) { $0[8] = 3 },
            Tamper(name: "record size below 96", expected: .corrupt) { ArchiveIndexTests.store32(&$0, 12, 95) },
            Tamper(name: "record size absurd", expected: .corrupt) { ArchiveIndexTests.store32(&$0, 12, UInt32.max) },
            Tamper(name: "count past the block", expected: .corrupt) { ArchiveIndexTests.store64(&$0, 16, 1_000_000) },
            Tamper(name: "count past the limit", expected: .limitExceeded) { ArchiveIndexTests.store64(&$0, 16, UInt64.max) },
            Tamper(name: "heap size past the block", expected: .corrupt) { ArchiveIndexTests.store64(&$0, 40, 1 << 20) },
            Tamper(name: "heap size huge", expected: .corrupt) { ArchiveIndexTests.store64(&$0, 40, UInt64.max) },
            Tamper(name: "metadata size past the block", expected: .corrupt) { ArchiveIndexTests.store32(&$0, 52, UInt32.max) },
            Tamper(name: "path offset past the heap", expected: .corrupt) { ArchiveIndexTests.store64(&$0, r1 + 56, 100_000) },
            Tamper(name: "path offset overflowing", expected: .corrupt) { ArchiveIndexTests.store64(&$0, r1 + 56, UInt64.max - 3) },
            Tamper(name: "path length past the heap", expected: .corrupt) { ArchiveIndexTests.store32(&$0, r1 + 52, UInt32.max) },
            Tamper(name: "link past the heap", expected: .corrupt) { ArchiveIndexTests.store32(&$0, 64 + 2 * 96 + 72, 5000) },
            Tamper(name: "data offset past T", expected: .corrupt) { ArchiveIndexTests.store64(&$0, r1 + 8, 7169) },
            Tamper(name: "size past T", expected: .corrupt) { ArchiveIndexTests.store64(&$0, r1 + 16, 7168) },
            Tamper(name: "size huge", expected: .corrupt) { ArchiveIndexTests.store64(&$0, r1 + 16, UInt64.max) },
            Tamper(name: "data before header", expected: .corrupt) { ArchiveIndexTests.store64(&$0, r1 + 8, 1000) },
            Tamper(name: "headers out of order", expected: .corrupt) { ArchiveIndexTests.store64(&$0, r1, 100) },
            Tamper(name: "nanoseconds out of range", expected: .corrupt) { ArchiveIndexTests.store32(&$0, r0 + 32, 1_000_000_000) },
            Tamper(name: "data inside the header block", expected: .corrupt) { ArchiveIndexTests.store64(&$0, r1 + 8, 1536 + 100) },
            // Every record naming the 303-byte link target of record 2: the strings made would
            // cost more memory than the heap holds.
            Tamper(name: "names sharing heap bytes", expected: .corrupt) { bytes in
                for record in [r0, r1] {
                    ArchiveIndexTests.store64(&bytes, record + 56, ArchiveIndexTests.load64(bytes, 64 + 2 * 96 + 64))
                    ArchiveIndexTests.store32(&bytes, record + 52, ArchiveIndexTests.load32(bytes, 64 + 2 * 96 + 72))
                }
            },
            Tamper(name: "path not UTF-8", expected: .corrupt) { bytes in
                let heap = 64 + 5 * 96
                bytes[heap] = 0xFF
            },
            Tamper(name: "metadata cut short", expected: .corrupt) { bytes in
                let size = Int(ArchiveIndexTests.load32(bytes, 52))
                ArchiveIndexTests.store32(&bytes, 52, UInt32(size - 3))
                bytes.removeLast(3)
            }
        ]

        @Test(arguments: tampers)
        func tamperedIndexesAreRefused(_ tamper: Tamper) throws {
            var bytes = Self.sample.encodedVersion1()
            tamper.change(&bytes)
            let error = #expect(throws: ArchiveError.self) { try ArchiveIndex.decode(bytes) }
            #expect(error?.code == tamper.expected, "\(String(describing: error))")
        }

        @Test func anArchiveWithAVersionOneIndexReadsAsBefore() async throws {
            let dir = try TemporaryDirectory()
            let tar = try tarStream([tarDirectory("d"), tarFile("d/a.txt", "alpha"), tarSymlink("d/l", to: "a.txt")])
            let entries = try indexEntries(of: tar)
            let index = ArchiveIndex(entries: entries, tarSize: UInt64(tar.count), chunkSize: 1 << 20, metadata: ["writer": "old"])
            let path = dir.path + "/v1.tar.xz"
            try await writeBytes(path, try indexedArchive(tar: tar, index: index.encodedVersion1()))
            let reader = try await ArchiveReader.open(path: path)
            #expect(reader.mode == .indexed)
            #expect(try await reader.entries() == entries)
            #expect(try await reader.metadata() == ["writer": "old"])
            #expect(try await reader.contents(of: "d/a.txt") == Array("alpha".utf8))
            #expect(try await reader.verify() == 3)
        }
    }
}
