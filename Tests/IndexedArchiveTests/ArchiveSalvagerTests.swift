import Foundation
import IndexedArchive
import Tar
import TestSupport
import Testing

extension EngineSuites {
    @Suite struct ArchiveSalvagerTests {
        struct Case {
            let packed: PackedTree
            let bytes: [UInt8]
            let blocks: [ToolBlock]
            let entries: [ArchiveEntry]

            static func make() async throws -> Case {
                let packed = try await PackedTree.make()
                return Case(
                    packed: packed, bytes: try await readBytes(packed.archive), blocks: try await xzToolBlocks(packed.archive),
                    entries: try await ArchiveReader(path: packed.archive).entries())
            }

            /// Members whose headers and content lie wholly before uncompressed offset `boundary`.
            func wholeBefore(_ boundary: UInt64) -> [String] {
                entries.filter { $0.dataOffset + $0.size <= boundary }.map(\.path)
            }

            /// Checks that `out` holds exactly `recovered`, each file equal to its source.
            func expectOutput(
                _ out: String, holds recovered: [String], _ what: String,
                sourceLocation: SourceLocation = #_sourceLocation
            ) async throws {
                let snapshot = try await TreeSnapshot.of(out + "/src")
                var expected = Set(
                    recovered.filter { $0 != "src/" }.map { path -> String in
                        let name = path.hasSuffix("/") ? String(path.dropLast()) : path
                        return String(name.dropFirst(4))
                    })
                // A recovered member's folders exist even when their own members were lost.
                for name in expected {
                    var parts = name.split(separator: "/").dropLast()
                    while !parts.isEmpty {
                        expected.insert(parts.joined(separator: "/"))
                        parts = parts.dropLast()
                    }
                }
                #expect(
                    Set(snapshot.items.keys) == expected, "\(what): output differs from the recovered list", sourceLocation: sourceLocation)
                #expect(
                    try await filesThatDifferFromSource(out + "/src", source: packed.root).isEmpty,
                    "\(what): a file differs from its source",
                    sourceLocation: sourceLocation)
            }
        }

        /// An index that shrinks `big.bin` and lists `hidden.sh` at a header planted in its
        /// content, every block sound: salvage saw `big.bin` disagree with the index, then
        /// resumed at the index's next offset, the planted header, and wrote a set-user-ID member
        /// that tar, bsdtar, `extract` and `verify` never show. Once the index is caught lying
        /// its offsets are no place to resume.
        @Test func anIndexCaughtLyingGivesNoPlaceToResume() async throws {
            let dir = try TemporaryDirectory()
            let script = Array("#!/bin/sh\necho hidden\n".utf8)
            var planted = try tarStream(
                [(TarHeader(path: "d/hidden.sh", kind: .regular, size: UInt64(script.count), mode: 0o4755), script)], end: false)
            planted += [UInt8](repeating: 0, count: 1024 - planted.count)
            let front = [UInt8](repeating: UInt8(ascii: "b"), count: 8192)
            let real = try tarStream([(TarHeader(path: "d/big.bin", kind: .regular, size: 9216, mode: 0o644), front + planted)])
            let told =
                try tarStream([(TarHeader(path: "d/big.bin", kind: .regular, size: 8192, mode: 0o644), front)], end: false) + planted
                + TarEncoder.endOfArchive
            let archive = dir.path + "/lying.tar.xz"
            try await writeBytes(archive, try indexedArchive(tar: real, describing: told, chunk: 4096))
            let out = dir.path + "/out"
            let report = try await ArchiveSalvager.salvage(path: archive, to: out)
            #expect(!report.recovered.contains("d/hidden.sh"), "\(report.recovered)")
            #expect(!FileManager.default.fileExists(atPath: out + "/d/hidden.sh"))
            #expect(report.damage?.contains("disagrees with the index") == true, "\(String(describing: report.damage))")
        }

        @Test(.enabled(if: toolExists("xz")))
        func anIntactArchiveSalvagesWhole() async throws {
            let c = try await Case.make()
            let out = c.packed.dir.path + "/out"
            let report = try await ArchiveSalvager.salvage(path: c.packed.archive, to: out)
            #expect(report.damage == nil)
            #expect(report.damageOffset == nil)
            #expect(report.lost.isEmpty)
            #expect(report.goodBlocks == c.blocks.count, "data blocks and both index blocks verify")
            #expect(report.lostIsComplete)
            #expect(report.recovered == c.entries.map(\.path))
            expectSameTree(
                try await TreeSnapshot.of(c.packed.root).droppingSetIDBits(), try await TreeSnapshot.of(out + "/src"),
                "salvaged intact archive")
        }

        /// A salvage cancelled while it writes a member removes that member's temporary file:
        /// nothing half-written is left, as for an extraction.
        @Test func aCancelledSalvageLeavesNoHalfWrittenMember() async throws {
            let dir = try TemporaryDirectory()
            let archive = try await packLongZeros(in: dir)
            let out = dir.path + "/out"
            let salvage = Task { try await ArchiveSalvager.salvage(path: archive, to: out) }
            let written = { (try? FileManager.default.contentsOfDirectory(atPath: out + "/big")) ?? [] }
            let start = ContinuousClock.now
            while written().isEmpty && ContinuousClock.now - start < .seconds(60) {
                try await Task.sleep(for: .milliseconds(2))
            }
            try #require(!written().isEmpty, "the member's file was never begun")
            salvage.cancel()
            await #expect(throws: CancellationError.self) { _ = try await salvage.value }
            #expect(written().isEmpty, "left behind: \(written())")
        }

        /// `tar -cJf` writes one block whose header carries no sizes: salvage decodes it forward
        /// until it ends, and an intact one is whole, with no damage reported.
        @Test(.enabled(if: toolExists("xz") && toolExists("tar")))
        func anIntactTarXzWithoutBlockSizesSalvagesWhole() async throws {
            let dir = try TemporaryDirectory()
            try dir.file("src/a.txt", "hello\n")
            try dir.file("src/b.bin", Samples.noise1Point2M)
            let archive = dir.path + "/T.tar.xz"
            let tar = try await runTool(["tar", "-cJf", archive, "src"], in: dir.path)
            #expect(tar.status == 0, "\(tar.stderr)")
            let report = try await ArchiveSalvager.salvage(path: archive, to: dir.path + "/out")
            #expect(report.damage == nil, "\(report.damage ?? "")")
            #expect(report.damageOffset == nil)
            #expect(report.lost.isEmpty)
            #expect(report.goodBlocks == 1)
            #expect(Set(report.recovered) == ["src/", "src/a.txt", "src/b.bin"])
            #expect(try await readBytes(dir.path + "/out/src/b.bin") == Samples.noise1Point2M)
        }

        /// Two xz streams concatenated, the tar stream cut between them mid-member: salvage reads
        /// on into the second stream and recovers every member, with no damage.
        @Test(.enabled(if: toolExists("xz") && toolExists("tar")))
        func aMultiStreamArchiveSalvagesWhole() async throws {
            let dir = try TemporaryDirectory()
            try dir.file("src/a.txt", "hello\n")
            try dir.file("src/b.bin", Samples.noise1Point2M)
            try dir.file("src/c.txt", Samples.text40K)
            let tar = try await runTool(["tar", "-cf", dir.path + "/T.tar", "src"], in: dir.path)
            #expect(tar.status == 0, "\(tar.stderr)")
            let plain = try await readBytes(dir.path + "/T.tar")
            let half = plain.count / 2
            let first = try await runTool(["xz", "-c"], stdin: Array(plain[..<half]))
            let second = try await runTool(["xz", "-c"], stdin: Array(plain[half...]))
            let archive = dir.path + "/T.tar.xz"
            try await writeBytes(archive, first.stdout + second.stdout)
            let report = try await ArchiveSalvager.salvage(path: archive, to: dir.path + "/out")
            #expect(report.damage == nil, "\(report.damage ?? "")")
            #expect(report.lost.isEmpty)
            #expect(report.goodBlocks == 2)
            #expect(Set(report.recovered) == ["src/", "src/a.txt", "src/b.bin", "src/c.txt"])
            #expect(try await readBytes(dir.path + "/out/src/c.txt") == Samples.text40K)
        }

        /// A destination that fills up (a 64 KiB tmpfs, mounted when the tests run as root) is an
        /// I/O error naming the file, thrown as such: the archive is not damaged.
        @Test(.enabled(if: getuid() == 0))
        func aFullDestinationIsAnIOErrorNotDamage() async throws {
            let c = try await Case.make()
            let mountPoint = c.packed.dir.path + "/full"
            try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: false)
            let mount = try await runTool(["/bin/mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", mountPoint])
            try #require(mount.status == 0, "tmpfs not available: \(mount.stderr)")
            defer { _ = umount2(mountPoint, 0) }
            let error = await #expect(throws: ArchiveError.self) {
                _ = try await ArchiveSalvager.salvage(path: c.packed.archive, to: mountPoint + "/out")
            }
            guard case .io(let errno)? = error?.code else {
                Issue.record("expected an I/O error, got \(String(describing: error))")
                return
            }
            #expect(errno == ENOSPC)
            #expect(error?.member != nil, "names the file being written: \(String(describing: error))")
        }

        /// Issue 11: salvage resynchronises on the next block header after a damaged block and
        /// resumes at the first member that starts after it, so only the members that touch the
        /// damaged block are lost (and hard links to them).
        @Test(.enabled(if: toolExists("xz")))
        func aDamagedDataBlockLosesOnlyTheMembersThatTouchIt() async throws {
            let c = try await Case.make()
            let dataBlocks = c.packed.summary.blocks
            #expect(dataBlocks >= 4, "the tree spans several blocks")
            for (k, block) in c.blocks.prefix(dataBlocks).enumerated() {
                var bytes = c.bytes
                bytes[Int(block.compressedOffset + block.totalSize / 2)] ^= 0x04
                let path = c.packed.dir.path + "/d\(k).tar.xz"
                try await writeBytes(path, bytes)
                let out = c.packed.dir.path + "/out\(k)"
                let report = try await ArchiveSalvager.salvage(path: path, to: out)
                let blockEnd = block.uncompressedOffset + block.uncompressedSize
                let resume = c.entries.map(\.headerOffset).filter { $0 >= blockEnd }.min()
                let before = c.wholeBefore(block.uncompressedOffset)
                let after = resume.map { next in c.entries.filter { $0.headerOffset >= next } } ?? []
                // A hard link comes back only if its target did.
                let expected =
                    before
                    + after.filter { entry in
                        entry.kind != .hardLink || before.contains(entry.linkTarget ?? "") || after.contains { $0.path == entry.linkTarget }
                    }.map(\.path)
                #expect(report.recovered == expected, "block \(k)")
                // The index at the end still reads, so every other member is reported lost.
                #expect(report.lost == c.entries.map(\.path).filter { !expected.contains($0) }, "block \(k)")
                #expect(!report.lost.isEmpty, "block \(k): the member it holds is lost")
                #expect(report.lostIsComplete, "block \(k)")
                if resume != nil {
                    #expect(report.damagedBlocks == 1, "block \(k)")
                    #expect(report.goodBlocks == c.blocks.count - 1, "block \(k): every other block, the index blocks too")
                } else {
                    #expect(report.goodBlocks == k)
                }
                #expect(report.damage != nil)
                #expect(
                    report.damageOffset.map { $0 >= block.compressedOffset && $0 <= block.compressedOffset + block.totalSize } == true,
                    "block \(k): damage at \(String(describing: report.damageOffset))")
                try await c.expectOutput(out, holds: expected, "block \(k)")
            }
        }

        @Test(.enabled(if: toolExists("xz")))
        func damageToTheIndexBlocksLosesNothing() async throws {
            let c = try await Case.make()
            let rich = c.blocks[c.blocks.count - 2]
            var bytes = c.bytes
            bytes[Int(rich.compressedOffset + rich.totalSize / 2)] ^= 0x10
            let path = c.packed.dir.path + "/i.tar.xz"
            try await writeBytes(path, bytes)
            let out = c.packed.dir.path + "/out"
            let report = try await ArchiveSalvager.salvage(path: path, to: out)
            #expect(report.recovered == c.entries.map(\.path))
            #expect(report.lost.isEmpty)
            #expect(report.goodBlocks == c.packed.summary.blocks)
            #expect(report.damageOffset.map { $0 >= rich.compressedOffset } == true)
            // Every byte, mode and link; the times to the second only, since the nanoseconds are
            // kept in the damaged index, not in the tar headers (issue #12).
            expectSameTree(
                try await TreeSnapshot.of(c.packed.root).droppingSetIDBits().truncatingNanoseconds(),
                try await TreeSnapshot.of(out + "/src"), "index damaged")
        }

        @Test(.enabled(if: toolExists("xz")))
        func aTruncatedArchiveSalvagesItsWholeBlocks() async throws {
            let c = try await Case.make()
            for (k, block) in c.blocks.enumerated() where k > 0 {
                for (cut, kind) in [(block.compressedOffset, "boundary"), (block.compressedOffset + block.totalSize / 2, "mid-block")] {
                    let path = c.packed.dir.path + "/t\(k)-\(kind).tar.xz"
                    try await writeBytes(path, c.bytes.prefix(Int(cut)))
                    let out = c.packed.dir.path + "/out\(k)-\(kind)"
                    let report = try await ArchiveSalvager.salvage(path: path, to: out)
                    let what = "cut at block \(k) (\(kind))"
                    let verifiedEnd = block.uncompressedOffset
                    let expected = c.wholeBefore(verifiedEnd)
                    #expect(report.recovered == expected, "\(what)")
                    #expect(report.goodBlocks == k, "\(what)")
                    #expect(report.damage != nil, "\(what)")
                    #expect(
                        report.damageOffset.map { $0 >= block.compressedOffset && $0 <= cut } == true,
                        "\(what): damage at \(String(describing: report.damageOffset))")
                    // Without the footer the index is unreadable: the loss reported is the member cut in two.
                    let cutMember = c.entries.filter { $0.dataOffset <= verifiedEnd && $0.dataOffset + $0.size > verifiedEnd }.map(\.path)
                    #expect(report.lost == cutMember, "\(what)")
                    #expect(!report.lostIsComplete, "\(what): members after the cut are unknown")
                    try await c.expectOutput(out, holds: expected, what)
                }
            }
        }

        @Test(.enabled(if: toolExists("xz")))
        func aSelectionSalvagesAndReportsOnlyTheSelectedMembers() async throws {
            let c = try await Case.make()
            let block = c.blocks[2]
            var bytes = c.bytes
            bytes[Int(block.compressedOffset + block.totalSize / 2)] ^= 0x04
            let path = c.packed.dir.path + "/d.tar.xz"
            try await writeBytes(path, bytes)
            var options = ExtractOptions()
            options.members = ["src/docs"]
            let out = c.packed.dir.path + "/out"
            let report = try await ArchiveSalvager.salvage(path: path, to: out, options: options)
            let expected = c.wholeBefore(block.uncompressedOffset).filter { $0.hasPrefix("src/docs/") }
            #expect(!expected.isEmpty)
            #expect(report.recovered == expected, "recovered lists the members written")
            #expect(
                report.lost == c.entries.map(\.path).filter { $0.hasPrefix("src/docs/") && !expected.contains($0) },
                "lost lists the selected members only")
            #expect(!report.lost.isEmpty)
            try await c.expectOutput(out, holds: expected + ["src/"], "selection")
        }

        @Test func aFileThatIsNotAnArchiveRecoversNothing() async throws {
            let dir = try TemporaryDirectory()
            try dir.file("junk.tar.xz", sampleBytes(count: 5000, seed: 1, text: true))
            let report = try await ArchiveSalvager.salvage(path: dir.path + "/junk.tar.xz", to: dir.path + "/out")
            #expect(report.recovered.isEmpty)
            #expect(report.goodBlocks == 0)
            #expect(report.damageOffset == 0)
            #expect(listing(dir.path + "/out").isEmpty)
        }

        @Test func aMissingFileIsAnError() async throws {
            let dir = try TemporaryDirectory()
            let error = await expectArchiveError("salvage missing") {
                try await ArchiveSalvager.salvage(path: dir.path + "/none.tar.xz", to: dir.path + "/out")
            }
            #expect(error?.code == .io(errno: ENOENT))
        }
    }
}
