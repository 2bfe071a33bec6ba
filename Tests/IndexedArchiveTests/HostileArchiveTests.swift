import Foundation
import IndexedArchive
import Tar
import TestSupport
import Testing
import XZ

extension EngineSuites {
    /// DESIGN §6: an archive is untrusted input. Every test here builds a malicious or damaged archive
    /// and checks that reading it ends in a typed error, writes nothing outside the destination, and
    /// leaves no half-written file.
    @Suite struct HostileArchiveTests {
        /// base/ holds the archive, base/dest (the destination) and base/outside (what must stay untouched).
        struct Scene {
            let base: TemporaryDirectory
            var archive: String { base.path + "/h.tar.xz" }
            var dest: String { base.path + "/dest" }
            var outside: String { base.path + "/outside" }

            init() throws {
                base = try TemporaryDirectory()
                try base.file("outside/target.txt", "original")
            }

            /// The base directory holds only what the test made: nothing escaped the destination.
            func expectNothingEscaped(sourceLocation: SourceLocation = #_sourceLocation) async throws {
                #expect(
                    Set(listing(base.path)).isSubset(of: ["dest", "h.tar.xz", "outside"]),
                    "base: \(listing(base.path))", sourceLocation: sourceLocation)
                #expect(listing(outside) == ["target.txt"], "outside: \(listing(outside))", sourceLocation: sourceLocation)
                #expect(try await readBytes(outside + "/target.txt") == Array("original".utf8), sourceLocation: sourceLocation)
                var info = stat()
                lstat(outside + "/target.txt", &info)
                #expect(info.st_nlink == 1, "no hard link was made to a file outside", sourceLocation: sourceLocation)
                #expect(!exists(base.path + "/escape") && !exists(base.path + "/escape2"), sourceLocation: sourceLocation)
            }
        }

        // MARK: - Paths that leave the destination

        /// A combining mark after a `/` makes one grapheme cluster with it: a check that splits or
        /// compares `String`s would see no separator there, where the kernel sees `..`.
        static let escapingNames = ["../escape", "ok/../../escape2", "./../escape", "../\u{301}escape", "ok/..//\u{301}../escape2"]

        @Test(arguments: ReadMode.allCases, escapingNames)
        func dotDotMembersAreRefused(_ mode: ReadMode, _ name: String) async throws {
            let scene = try Scene()
            let tar = try tarStream([tarDirectory("ok"), tarFile("ok/a.txt", "fine"), tarFile(name, "pwned")])
            let reader = try await hostileArchive(tar, mode: mode, at: scene.archive)
            let error = await expectArchiveError("extract \(name)") { try await reader.extract(to: scene.dest) }
            #expect(error?.code == .unsafePath)
            #expect(error?.member?.contains("..") == true, "the error names the member: \(String(describing: error))")
            try await scene.expectNothingEscaped()
        }

        @Test(arguments: ReadMode.allCases)
        func anAbsolutePathBehindACombiningMarkIsRefused(_ mode: ReadMode) async throws {
            let scene = try Scene()
            let tar = try tarStream([tarFile("/\u{301}" + scene.outside + "/abs.txt", "pwned")])
            let reader = try await hostileArchive(tar, mode: mode, at: scene.archive)
            let error = await expectArchiveError("absolute behind a combining mark") { try await reader.extract(to: scene.dest) }
            #expect(error?.code == .unsafePath)
            #expect(error?.message.contains("absolute") == true, "\(String(describing: error))")
            try await scene.expectNothingEscaped()
        }

        @Test(arguments: ReadMode.allCases)
        func absolutePathsAreRefusedOrConfined(_ mode: ReadMode) async throws {
            let scene = try Scene()
            let absolute = scene.outside + "/abs.txt"
            let tar = try tarStream([tarFile(absolute, "pwned")])
            let reader = try await hostileArchive(tar, mode: mode, at: scene.archive)
            let error = await expectArchiveError("extract \(absolute)") { try await reader.extract(to: scene.dest) }
            #expect(error?.code == .unsafePath)
            try await scene.expectNothingEscaped()

            // With allowAbsolutePaths the leading '/' is stripped: the file lands inside dest.
            var options = ExtractOptions()
            options.allowAbsolutePaths = true
            try await reader.extract(to: scene.dest, options: options)
            #expect(try await readBytes(scene.dest + absolute) == Array("pwned".utf8))
            try await scene.expectNothingEscaped()
        }

        @Test(arguments: ReadMode.allCases, ["ABSOLUTE", "../outside"])
        func writingThroughASymlinkIsRefused(_ mode: ReadMode, _ target: String) async throws {
            let scene = try Scene()
            let linkTarget = target == "ABSOLUTE" ? scene.outside : target
            let tar = try tarStream([tarSymlink("link", to: linkTarget), tarFile("link/file", "pwned")])
            let reader = try await hostileArchive(tar, mode: mode, at: scene.archive)
            let error = await expectArchiveError("extract link/file") { try await reader.extract(to: scene.dest) }
            #expect(error?.code == .unsafePath)
            #expect(error?.member == "link/file")
            try await scene.expectNothingEscaped()
        }

        /// A folder member over a link the archive made: the link is removed (never followed)
        /// and a real folder takes its place, as tar does, so the file after it lands inside the
        /// destination and nothing reaches the link's target.
        @Test(arguments: ReadMode.allCases)
        func aDirectoryMemberOverASymlinkReplacesTheLinkAndWritesNothingThroughIt(_ mode: ReadMode) async throws {
            let scene = try Scene()
            let tar = try tarStream([tarSymlink("link", to: scene.outside), tarDirectory("link"), tarFile("link/file", "pwned")])
            let reader = try await hostileArchive(tar, mode: mode, at: scene.archive)
            try await reader.extract(to: scene.dest)
            var info = stat()
            lstat(scene.dest + "/link", &info)
            #expect(info.st_mode & S_IFMT == S_IFDIR)
            #expect(try await readBytes(scene.dest + "/link/file") == Array("pwned".utf8))
            try await scene.expectNothingEscaped()
        }

        /// A folder member, then a link of the same name to outside: the empty folder gives way
        /// to the link, and the folders' metadata, set at the end, is not set through it (the
        /// outside folder keeps its mode and time). Before an empty folder gave way, the link was
        /// refused there.
        @Test(arguments: ReadMode.allCases)
        func aLinkThatReplacesAFolderTakesNoneOfTheFoldersMetadata(_ mode: ReadMode) async throws {
            let scene = try Scene()
            chmod(scene.outside, 0o700)
            var outsideBefore = stat()
            stat(scene.outside, &outsideBefore)
            var folder = tarDirectory("d")
            folder.0.mode = 0o777
            let tar = try tarStream([folder, tarSymlink("d", to: scene.outside)])
            let reader = try await hostileArchive(tar, mode: mode, at: scene.archive)
            try await reader.extract(to: scene.dest)
            var link = stat()
            lstat(scene.dest + "/d", &link)
            #expect(link.st_mode & S_IFMT == S_IFLNK)
            var outsideAfter = stat()
            stat(scene.outside, &outsideAfter)
            #expect(outsideAfter.st_mode & 0o7777 == 0o700, "the folder's mode went through the link")
            #expect(outsideAfter.st_mtim.tv_sec == outsideBefore.st_mtim.tv_sec, "the folder's time went through the link")
            try await scene.expectNothingEscaped()
        }

        @Test(arguments: ReadMode.allCases)
        func aFileNamedLikeASymlinkReplacesIt(_ mode: ReadMode) async throws {
            let scene = try Scene()
            let tar = try tarStream([tarSymlink("link", to: scene.outside + "/target.txt"), tarFile("link", "replaced")])
            let reader = try await hostileArchive(tar, mode: mode, at: scene.archive)
            try await reader.extract(to: scene.dest)
            var info = stat()
            lstat(scene.dest + "/link", &info)
            #expect(info.st_mode & S_IFMT == S_IFREG, "the symlink was replaced by a regular file")
            #expect(try await readBytes(scene.dest + "/link") == Array("replaced".utf8))
            try await scene.expectNothingEscaped()
        }

        @Test(arguments: ReadMode.allCases, ["../outside/target.txt", "ABSOLUTE", "link/target.txt", "ok/../../outside/target.txt"])
        func hardLinksOutsideAreRefused(_ mode: ReadMode, _ target: String) async throws {
            let scene = try Scene()
            let linkTarget = target == "ABSOLUTE" ? scene.outside + "/target.txt" : target
            let tar = try tarStream([
                tarSymlink("link", to: scene.outside), tarDirectory("ok"),
                tarHardLink("hl", to: linkTarget), tarFile("after", "never")
            ])
            let reader = try await hostileArchive(tar, mode: mode, at: scene.archive)
            let error = await expectArchiveError("hard link to \(linkTarget)") { try await reader.extract(to: scene.dest) }
            #expect(error?.code == .unsafePath)
            // The link is the member at fault, whichever check refused its target.
            #expect(error?.member == "hl", "\(String(describing: error))")
            #expect(
                error?.message.contains(linkTarget) == true || error?.message.contains("'link'") == true, "\(String(describing: error))")
            #expect(!exists(scene.dest + "/hl"))
            try await scene.expectNothingEscaped()
        }

        /// From `sub/link`, one `..` reaches the destination itself; two leave it. `sub/../x` stays
        /// inside by its names but is refused: a `..` after a name is judged only by resolving links.
        static let leavingTargets = [
            "ABSOLUTE", "../..", "../../outside", "a/../../..", "x/../y", "./.././..", "../../../etc/passwd",
            "../../\u{301}outside", "/\u{301}etc/passwd"
        ]

        @Test(arguments: ReadMode.allCases, leavingTargets)
        func confinedSymlinksRefuseTargetsThatLeave(_ mode: ReadMode, _ target: String) async throws {
            let scene = try Scene()
            let linkTarget = target == "ABSOLUTE" ? scene.outside : target
            let tar = try tarStream([tarDirectory("sub"), tarSymlink("sub/link", to: linkTarget), tarFile("after", "never")])
            let reader = try await hostileArchive(tar, mode: mode, at: scene.archive)
            var options = ExtractOptions()
            options.confineSymlinks = true
            let error = await expectArchiveError("link to \(linkTarget)") { try await reader.extract(to: scene.dest, options: options) }
            #expect(error?.code == .unsafePath)
            #expect(error?.member == "sub/link")
            #expect(!exists(scene.dest + "/sub/link") && !exists(scene.dest + "/after"))
            try await scene.expectNothingEscaped()
        }

        @Test(arguments: ReadMode.allCases)
        func confinedSymlinksKeepTargetsInside(_ mode: ReadMode) async throws {
            let scene = try Scene()
            let tar = try tarStream([
                tarDirectory("a"), tarDirectory("a/b"), tarFile("top.txt", "top"),
                tarSymlink("a/b/up", to: "../../top.txt"), tarSymlink("a/here", to: "b/./"),
                tarSymlink("Documents", to: ".")
            ])
            let reader = try await hostileArchive(tar, mode: mode, at: scene.archive)
            var options = ExtractOptions()
            options.confineSymlinks = true
            try await reader.extract(to: scene.dest, options: options)
            #expect(try await readBytes(scene.dest + "/a/b/up") == Array("top".utf8))
            #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: scene.dest + "/a/here")) == "b/./")
            try await scene.expectNothingEscaped()
        }

        @Test func anIndexThatHidesAnEscapingNameIsCaughtBeforeWriting() async throws {
            let scene = try Scene()
            let tar = try tarStream([tarFile("ok.txt", "fine"), tarFile("../escape", "pwned")])
            // The index says "harmless.txt" where the tar header says "../escape".
            try await writeBytes(scene.archive, try indexedArchive(tar: tar, tamper: { $0.entries[1].path = "harmless.txt" }))
            let reader = try ArchiveReader(path: scene.archive)
            #expect(reader.mode == .indexed)
            #expect(try await reader.entries().map(\.path) == ["ok.txt", "harmless.txt"])
            let error = await expectArchiveError("extract") { try await reader.extract(to: scene.dest) }
            #expect(error?.code == .corrupt, "header and index disagree: \(String(describing: error))")
            try await scene.expectNothingEscaped()
        }

        // Our layout only: blocks written by single-threaded xz carry no sizes in their headers,
        // so the salvager (which walks blocks by those sizes) recovers nothing from them.
        @Test func salvageIsAsSafeAsExtraction() async throws {
            let mode = ReadMode.indexed
            let scene = try Scene()
            let tar = try tarStream([
                tarFile("ok.txt", "fine"), tarSymlink("link", to: scene.outside), tarFile("link/x", "pwned"),
                tarFile("../escape", "pwned")
            ])
            _ = try await hostileArchive(tar, mode: mode, at: scene.archive)
            let report = try await ArchiveSalvager.salvage(path: scene.archive, to: scene.dest)
            // The refused member ends the salvage, named; it is not damage to the bytes.
            #expect(report.damage == nil, "\(report.damage ?? "")")
            #expect(report.stop?.contains("member 'link/x'") == true, "\(report.stop ?? "nil")")
            #expect(report.lost.contains("link/x") && report.lost.contains("../escape"))
            #expect(!report.recovered.contains("link/x") && !report.recovered.contains("../escape"))
            #expect(try await readBytes(scene.dest + "/ok.txt") == Array("fine".utf8))
            try await scene.expectNothingEscaped()
        }

        // MARK: - Lying sizes

        @Test(arguments: ReadMode.allCases)
        func aHeaderClaimingATebibyteFailsCleanly(_ mode: ReadMode) async throws {
            let scene = try Scene()
            // A pax header declares 1 TiB; 10 KB of data follow, then the stream just ends.
            var tar = try TarEncoder.encode(TarHeader(path: "huge.bin", kind: .regular, size: 1 << 40))
            tar += sampleBytes(count: 10_240, seed: 9, text: true)
            let path = scene.archive
            switch mode {
            case .sequential: try await writeBytes(path, try await xzTool(tar))
            case .indexed:
                // The index cannot describe it (the size is past the tar stream); the reader must say so.
                try await writeBytes(
                    path,
                    try indexedArchive(
                        tar: try tarStream([tarFile("small", "x")]),
                        tamper: { index in
                            index.entries[0].size = 1 << 40
                        }))
                let error = await expectArchiveError("open") { try ArchiveReader(path: path) }
                #expect(error?.code == .corrupt)
                return
            }
            let reader = try ArchiveReader(path: path)
            let listError = await expectArchiveError("entries") { try await reader.entries() }
            #expect(listError?.code == .corrupt)
            let verifyError = await expectArchiveError("verify") { try await reader.verify() }
            #expect(verifyError?.code == .corrupt)
            let readError = await expectArchiveError("contents") { try await reader.contents(of: "huge.bin") }
            #expect(readError.map { [.corrupt, .limitExceeded].contains($0.code) } == true)
            let extractError = await expectArchiveError("extract") { try await reader.extract(to: scene.dest) }
            // Beyond the byte limit for an archive of its size: refused before a byte is written.
            #expect(extractError.map { [.corrupt, .limitExceeded].contains($0.code) } == true, "\(String(describing: extractError))")
            #expect(!exists(scene.dest + "/huge.bin"), "the cut member is removed, not left half-written")
        }

        // MARK: - Damage to our own archives

        /// Every block's place according to the `xz` tool, the archive bytes, and the source tree.
        struct Damaged {
            let packed: PackedTree
            let bytes: [UInt8]
            let blocks: [ToolBlock]
            let entries: [ArchiveEntry]

            static func make() async throws -> Damaged {
                let packed = try await PackedTree.make()
                let entries = try await ArchiveReader(path: packed.archive).entries()
                return Damaged(
                    packed: packed, bytes: try await readBytes(packed.archive),
                    blocks: try await xzToolBlocks(packed.archive), entries: entries)
            }

            var dataBlocks: ArraySlice<ToolBlock> { blocks.prefix(packed.summary.blocks) }
        }

        @Test(.enabled(if: toolExists("xz")))
        func truncationAnywhereIsATypedErrorAndLeavesNoPartialFile() async throws {
            let damaged = try await Damaged.make()
            let size = damaged.bytes.count
            var cuts: Set<Int> = [6, 12, size - 1, size - 12, size - 13]
            for block in damaged.blocks {
                cuts.insert(Int(block.compressedOffset))
                cuts.insert(Int(block.compressedOffset + block.totalSize / 2))
                cuts.insert(Int(block.compressedOffset + block.totalSize))  // the start of the next block or the xz Index
            }
            let indexStart = Int(damaged.blocks.last!.compressedOffset + damaged.blocks.last!.totalSize)
            cuts.insert(indexStart + (size - 12 - indexStart) / 2)
            let dir = damaged.packed.dir.path
            for cut in cuts.sorted() where cut > 0 && cut < size {
                let path = "\(dir)/cut-\(cut).tar.xz"
                try await writeBytes(path, damaged.bytes.prefix(cut))
                let reader: ArchiveReader
                do {
                    reader = try ArchiveReader(path: path)
                } catch is ArchiveError {
                    continue
                } catch {
                    Issue.record("cut at \(cut): open threw \(type(of: error)): \(error)")
                    continue
                }
                #expect(reader.mode == .sequential, "cut at \(cut): without its footer the index cannot be trusted")
                let verify = await expectArchiveError("verify, cut at \(cut)") { try await reader.verify() }
                #expect(verify.map { [.corrupt, .notAnArchive].contains($0.code) } == true, "cut at \(cut): \(String(describing: verify))")
                await expectArchiveError("entries, cut at \(cut)") { try await reader.entries() }
                let out = "\(dir)/out-\(cut)"
                await expectArchiveError("extract, cut at \(cut)") { try await reader.extract(to: out) }
                #expect(
                    try await filesThatDifferFromSource(out + "/src", source: damaged.packed.root).isEmpty,
                    "cut at \(cut): a file in the output is partial")
                try? FileManager.default.removeItem(atPath: out)
                try? FileManager.default.removeItem(atPath: path)
            }
        }

        @Test(.enabled(if: toolExists("xz")))
        func aFlippedByteInAnyBlockIsCaught() async throws {
            let damaged = try await Damaged.make()
            let dir = damaged.packed.dir.path
            // Each block is damaged twice: in the middle of its data, and in its CRC64 (its last byte).
            for (i, block) in damaged.blocks.enumerated() {
                for at in [Int(block.compressedOffset + block.totalSize / 2), Int(block.compressedOffset + block.totalSize - 1)] {
                    var bytes = damaged.bytes
                    bytes[at] ^= 0x20
                    let path = "\(dir)/flip-\(i).tar.xz"
                    try await writeBytes(path, bytes)
                    let range = block.compressedOffset...(block.compressedOffset + block.totalSize)
                    let name =
                        i < damaged.packed.summary.blocks
                        ? "data block \(i)" : (i == damaged.blocks.count - 2 ? "rich index" : "pixz index")
                    let what = "\(name), byte \(at)"
                    let reader: ArchiveReader
                    do {
                        reader = try ArchiveReader(path: path)
                    } catch let error as ArchiveError {
                        // Opening reads the index blocks: damage there is found at once.
                        #expect(i >= damaged.packed.summary.blocks, "\(what): opening should not decode data blocks")
                        #expect(error.code == .corrupt)
                        #expect(
                            error.offset.map { range.contains($0) } == true,
                            "\(what): offset \(String(describing: error.offset)) not in \(range)")
                        continue
                    }
                    let error = await expectArchiveError("verify, \(what)") { try await reader.verify() }
                    #expect(error.map { [.corrupt, .checksumMismatch].contains($0.code) } == true, "\(what): \(String(describing: error))")
                    #expect(
                        error?.offset.map { range.contains($0) } == true,
                        "\(what): offset \(String(describing: error?.offset)) not in \(range)")

                    let out = "\(dir)/out-\(i)"
                    await expectArchiveError("extract, \(what)") { try await reader.extract(to: out) }
                    #expect(
                        try await filesThatDifferFromSource(out + "/src", source: damaged.packed.root).isEmpty,
                        "\(what): partial file written")
                    try? FileManager.default.removeItem(atPath: out)

                    guard i < damaged.packed.summary.blocks else { continue }
                    // Random access still reads a member that lies wholly in other blocks...
                    let blockStart = block.uncompressedOffset
                    let blockEnd = block.uncompressedOffset + block.uncompressedSize
                    let elsewhere = damaged.entries.first {
                        $0.kind == .regular && $0.size > 0 && ($0.dataOffset + $0.size <= blockStart || $0.dataOffset >= blockEnd)
                    }
                    if let elsewhere {
                        let original = try await readBytes(damaged.packed.root + "/" + elsewhere.name.dropFirst(4))
                        #expect(try await reader.contents(of: elsewhere.name) == original, "\(what): \(elsewhere.name) is intact")
                    }
                    // ...never returns wrong bytes for one that lies in the damaged block (the decoded
                    // prefix before the damage may be right: then its content checksum says so)...
                    for inside in damaged.entries
                    where inside.kind == .regular && inside.dataOffset < blockEnd
                        && inside.dataOffset + inside.size > blockStart
                    {
                        let original = try await readBytes(damaged.packed.root + "/" + inside.name.dropFirst(4))
                        do {
                            let bytes = try await reader.contents(of: inside.name)
                            #expect(bytes == original, "\(what): \(inside.name) read back wrong bytes")
                        } catch {
                            #expect(error is ArchiveError, "\(what): \(inside.name): \(error)")
                        }
                    }
                    // ...and refuses one that needs the whole damaged block, whose check is then verified.
                    if let across = damaged.entries.first(where: {
                        $0.kind == .regular && $0.dataOffset < blockEnd && $0.dataOffset + $0.size > blockEnd
                    }) {
                        let error = await expectArchiveError("\(what): contents of \(across.name)") {
                            try await reader.contents(of: across.name)
                        }
                        #expect(error?.code == .corrupt)
                    }
                }
            }
        }

        @Test(.enabled(if: toolExists("xz")))
        func aDamagedPixzIndexLargerThanOneDecoderSliceIsCaught() async throws {
            // 1400 members with long names: the pixz index block decodes to more than 256 KiB, more
            // than the first slice the reader decodes to recognise it.
            let dir = try TemporaryDirectory()
            let root = dir.path + "/src"
            try await offPool {
                for i in 0..<1400 {
                    try createFile(root + "/" + String(format: "%05d-", i) + String(repeating: "n", count: 180), [])
                }
            }
            let archive = dir.path + "/p.tar.xz"
            try await ArchivePacker.pack([PackSource(path: root)], to: .file(archive), options: testOptions())
            let blocks = try await xzToolBlocks(archive)
            let pixz = blocks[blocks.count - 1]
            #expect(pixz.uncompressedSize > 256 * 1024)
            var bytes = try await readBytes(archive)
            bytes[Int(pixz.compressedOffset + pixz.totalSize - 1)] ^= 0x01
            try await writeBytes(archive, bytes)
            #expect(try await runTool(["xz", "-t", archive]).status != 0, "xz -t notices the damaged check")
            let error = await expectArchiveError("open or verify") {
                let reader = try ArchiveReader(path: archive)
                return try await reader.verify()
            }
            #expect(error?.code == .corrupt)
        }

        @Test func randomDamageNeverCrashes() async throws {
            // A small archive, so that many variants stay cheap: bytes flipped at spread positions.
            let dir = try TemporaryDirectory()
            try dir.file("src/a.txt", sampleBytes(count: 3000, seed: 5, text: true))
            try dir.file("src/b/c.bin", sampleBytes(count: 700, seed: 6, text: false))
            symlink("a.txt", dir.path + "/src/l")
            let archive = dir.path + "/s.tar.xz"
            try await ArchivePacker.pack([PackSource(path: dir.path + "/src")], to: .file(archive), options: testOptions())
            let original = try await readBytes(archive)
            var state: UInt64 = 0x1234_5678
            for round in 0..<120 {
                var bytes = original
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                let position = Int((state >> 33) % UInt64(bytes.count))
                bytes[position] ^= UInt8(truncatingIfNeeded: (state >> 20) | 1)
                let path = dir.path + "/r.tar.xz"
                try await writeBytes(path, bytes)
                do {
                    let reader = try ArchiveReader(path: path)
                    _ = try? await reader.entries()
                    _ = try? await reader.contents(of: "src/a.txt")
                    try await reader.verify()
                    // A flip that verify accepts must be one that changes nothing the reader uses.
                    let out = dir.path + "/o\(round)"
                    try await reader.extract(to: out)
                    #expect(
                        try await filesThatDifferFromSource(out + "/src", source: dir.path + "/src").isEmpty,
                        "flip at \(position) passed verify but changed the output")
                    try? FileManager.default.removeItem(atPath: out)
                } catch is ArchiveError {
                    continue
                } catch {
                    Issue.record("flip at \(position): \(type(of: error)) \(error)")
                }
            }
        }
    }
}
