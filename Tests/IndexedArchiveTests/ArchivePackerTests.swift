import Foundation
import Synchronization
import TestSupport
import Testing
import XZ

@testable import IndexedArchive

extension EngineSuites {
    @Suite struct ArchivePackerTests {
        /// A tree with every kind the format stores.
        static func makeTree(in dir: TemporaryDirectory) throws -> String {
            let root = dir.path + "/src"
            try dir.file("src/empty.txt", [])
            try dir.file("src/exact512.bin", sampleBytes(count: 512, seed: 1, text: false))
            try dir.file("src/docs/notes.txt", sampleBytes(count: 40_000, seed: 2, text: true))
            try dir.file("src/docs/deep/er/still/data.json", sampleBytes(count: 3_000_000, seed: 3, text: true))
            try dir.file("src/media/noise.bin", sampleBytes(count: 2_500_000, seed: 4, text: false))
            try dir.file("src/private.key", "secret", mode: 0o600)
            try dir.file("src/run.sh", "#!/bin/sh\necho hi\n", mode: 0o755)
            try dir.file("src/ünïcödé-名前.txt", "unicode")
            let long = String(repeating: "long-component-", count: 8)
            try dir.file("src/\(long)/\(long)/file.txt", "deep and long")
            symlink("docs/notes.txt", root + "/link-to-notes")
            symlink("/nonexistent/" + String(repeating: "x", count: 150), root + "/dangling")
            link(root + "/docs/notes.txt", root + "/hardlink-to-notes")
            mkdir(root + "/sticky", 0o1777)
            chmod(root + "/sticky", 0o1777)
            var times = [timespec(tv_sec: 1_600_000_000, tv_nsec: 123_456_789), timespec(tv_sec: 1_600_000_000, tv_nsec: 123_456_789)]
            utimensat(AT_FDCWD, root + "/docs/notes.txt", &times, 0)
            return root
        }

        static func options(chunk: Int = 1 << 20, preset: Int = 1) -> PackOptions {
            var options = PackOptions()
            options.chunkSize = chunk
            options.preset = preset
            options.metadata = ["resourcesVersion": "3"]
            return options
        }

        @Test func roundTripPreservesEveryKind() async throws {
            let dir = try TemporaryDirectory()
            let root = try Self.makeTree(in: dir)
            let archive = dir.path + "/a.tar.xz"
            let summary = try await ArchivePacker.pack(
                [PackSource(path: root, archivePath: "src")], to: .file(archive),
                options: Self.options())
            #expect(summary.entries == 21)
            #expect(summary.blocks >= 5)
            #expect(summary.storedBlocks >= 1, "the noise file's block should be stored")
            #expect(FileManager.default.fileExists(atPath: archive))

            let reader = try ArchiveReader(path: archive)
            #expect(reader.mode == .indexed)
            let entries = try await reader.entries()
            #expect(entries.count == summary.entries)
            #expect(entries.first?.path == "src/")
            let hard = try #require(entries.first { $0.name == "src/hardlink-to-notes" })
            #expect(hard.kind == .hardLink)
            #expect(hard.linkTarget == "src/docs/notes.txt")
            #expect(try await reader.metadata()["resourcesVersion"] == "3")
            #expect(try await reader.verify() == summary.entries)

            let out = dir.path + "/out"
            try await reader.extract(to: out)
            let original = try await TreeSnapshot.of(root)
            let extracted = try await TreeSnapshot.of(out + "/src")
            #expect(original.items.keys.sorted() == extracted.items.keys.sorted())
            for (key, item) in original.items {
                #expect(extracted.items[key] == item, "\(key) differs")
            }
            var a = stat()
            var b = stat()
            lstat(out + "/src/docs/notes.txt", &a)
            lstat(out + "/src/hardlink-to-notes", &b)
            #expect(a.st_ino == b.st_ino, "the hard link shares the inode")
        }

        /// The default nice length at preset 6 (16) and preset 6's own (64) do different LZMA work
        /// on the same text, and both archives extract the same tree.
        @Test func niceLengthReachesTheEncodersAndBothArchivesExtract() async throws {
            let dir = try TemporaryDirectory()
            var text: [UInt8] = []
            for line in 0..<20_000 { text += Array("line \(line): the quick brown fox jumps over the lazy dog \(line % 97)\n".utf8) }
            try dir.file("src/long.txt", text)
            var archives: [Int?: [UInt8]] = [:]
            for niceLength in [nil, 64] as [Int?] {
                var options = Self.options()
                options.preset = 6
                options.niceLength = niceLength
                let archive = dir.path + "/nice-\(niceLength ?? 0).tar.xz"
                _ = try await ArchivePacker.pack(
                    [PackSource(path: dir.path + "/src", archivePath: "src")], to: .file(archive), options: options)
                archives[niceLength] = try await readBytes(archive)
                let out = dir.path + "/out-\(niceLength ?? 0)"
                try await ArchiveReader(path: archive).extract(to: out)
                #expect(try await readBytes(out + "/src/long.txt") == text)
            }
            let defaultArchive = try #require(archives[nil])
            let presetArchive = try #require(archives[64])
            #expect(defaultArchive != presetArchive, "nice length 16 and 64 wrote the same archive")
        }

        /// At preset 6 every block, the indexes' too, is coded with a dictionary of three quarters
        /// of the chunk, as `xz` reads it; at preset 9 with the chunk's.
        @Test(.enabled(if: toolExists("xz")), arguments: [(6, "768KiB"), (9, "1MiB")])
        func theBlocksCarryTheDictionaryOfThePreset(preset: Int, dictionary: String) async throws {
            let dir = try TemporaryDirectory()
            try dir.file("src/a.txt", sampleBytes(count: 1_500_000, seed: 9, text: true))
            var options = Self.options()
            options.preset = preset
            let archive = dir.path + "/a.tar.xz"
            _ = try await ArchivePacker.pack(
                [PackSource(path: dir.path + "/src", archivePath: "src")], to: .file(archive), options: options)
            let blocks = try await xzToolBlocks(archive)
            #expect(blocks.count >= 3)
            #expect(blocks.allSatisfy { $0.filters == "--lzma2=dict=\(dictionary)" }, "\(blocks.map(\.filters))")
            try await ArchiveReader(path: archive).extract(to: dir.path + "/out")
            #expect(try await readBytes(dir.path + "/out/src/a.txt") == sampleBytes(count: 1_500_000, seed: 9, text: true))
        }

        @Test func everyMemberReadsBackAtRandom() async throws {
            let dir = try TemporaryDirectory()
            let root = try Self.makeTree(in: dir)
            let archive = dir.path + "/a.tar.xz"
            try await ArchivePacker.pack([PackSource(path: root, archivePath: "src")], to: .file(archive), options: Self.options())
            let reader = try ArchiveReader(path: archive)
            for entry in try await reader.entries().shuffled() where entry.kind == .regular {
                let bytes = try await reader.contents(of: entry.name)
                let original = try Data(contentsOf: URL(fileURLWithPath: root + "/" + entry.name.dropFirst(4)))
                #expect(bytes == Array(original), "\(entry.name)")
            }
            await #expect(throws: ArchiveError.self) { try await reader.contents(of: "src/missing") }
        }

        /// GNU tar and bsdtar pack a tree whose paths pass `PATH_MAX`; so must we, and read it back.
        @Test func aTreeDeeperThanPathMaxPacksAndExtractsWhole() async throws {
            let dir = try TemporaryDirectory()
            let root = dir.path + "/src"
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            let bottom = try makeTreeDeeperThanPathMax(under: root)
            let archive = dir.path + "/deep.tar.xz"
            let summary = try await ArchivePacker.pack(
                [PackSource(path: root, archivePath: "src")], to: .file(archive), options: Self.options())
            #expect(summary.warnings.isEmpty, "\(summary.warnings)")
            let reader = try ArchiveReader(path: archive)
            let relative = "src" + bottom.dropFirst(root.count)
            let entries = try await reader.entries()
            #expect(entries.count == 1 + 25 + 3)
            #expect(try await reader.contents(of: relative + "/deep.txt") == Array("deep".utf8))
            let link = try #require(entries.first { $0.name == relative + "/link" })
            #expect(link.kind == .symbolicLink && link.linkTarget == "deep.txt")
            let file = try #require(entries.first { $0.name == relative + "/deep.txt" })
            #expect(file.mode & 0o777 == 0o640)

            let out = dir.path + "/out"
            try await reader.extract(to: out)
            let extracted = out + "/" + relative
            #expect(try SystemCall.readlink(extracted + "/link") == Array("deep.txt".utf8))
            #expect(try SystemCall.lstat(extracted + "/deep.txt").st_size == 4)
            #expect(try SystemCall.lstat(extracted + "/sub").st_mode & 0o7777 == 0o700)
        }

        // MARK: - Sources and archive paths

        @Test func severalRootsGoUnderTheirChosenArchivePaths() async throws {
            let dir = try TemporaryDirectory()
            try dir.file("docs/a.txt", "alpha")
            try dir.file("docs/sub/b.txt", "bravo")
            try dir.file("caches/c.bin", Samples.noise512)
            try dir.file("single.txt", "single")
            let archive = dir.path + "/m.tar.xz"
            let summary = try await ArchivePacker.pack(
                [
                    PackSource(path: dir.path + "/docs", archivePath: "app/Documents"),
                    PackSource(path: dir.path + "/caches", archivePath: "./app//Library/Caches/"),
                    PackSource(path: dir.path + "/single.txt", archivePath: "loose/one.txt"),
                    PackSource(path: dir.path + "/docs/sub")
                ], to: .file(archive), options: testOptions())
            let reader = try ArchiveReader(path: archive)
            let paths = try await reader.entries().map(\.path)
            #expect(
                paths == [
                    // Each folder's names grouped by type (WalkOrder): `sub`, without an extension, first.
                    "app/Documents/", "app/Documents/sub/", "app/Documents/sub/b.txt", "app/Documents/a.txt",
                    "app/Library/Caches/", "app/Library/Caches/c.bin", "loose/one.txt", "sub/", "sub/b.txt"
                ])
            #expect(summary.entries == paths.count)
            let out = dir.path + "/out"
            try await reader.extract(to: out)
            #expect(try await readBytes(out + "/app/Documents/sub/b.txt") == Array("bravo".utf8))
            #expect(try await readBytes(out + "/app/Library/Caches/c.bin") == Samples.noise512)
            #expect(try await readBytes(out + "/loose/one.txt") == Array("single".utf8))
            #expect(try await readBytes(out + "/sub/b.txt") == Array("bravo".utf8))
        }

        @Test func aDuplicateArchivePathIsRefused() async throws {
            let dir = try TemporaryDirectory()
            try dir.file("one/x.txt", "one")
            try dir.file("two/x.txt", "two")
            try dir.file("lone.txt", "lone")
            let archive = dir.path + "/d.tar.xz"
            for sources in [
                [PackSource(path: dir.path + "/one", archivePath: "same"), PackSource(path: dir.path + "/two", archivePath: "same")],
                [PackSource(path: dir.path + "/one", archivePath: "p"), PackSource(path: dir.path + "/lone.txt", archivePath: "p/x.txt")],
                [PackSource(path: dir.path + "/lone.txt", archivePath: "q"), PackSource(path: dir.path + "/one", archivePath: "q/")]
            ] {
                let error = await expectArchiveError("\(sources.map(\.archivePath))") {
                    try await ArchivePacker.pack(sources, to: .file(archive), options: testOptions())
                }
                #expect(error?.code == .invalidArchivePath)
                #expect(error?.path == sources[1].path || error?.path?.hasPrefix(sources[1].path) == true, "names the second source")
                #expect(!exists(archive))
            }
        }

        @Test(arguments: ["..", "../up", "a/../b", "a/..", "/abs/path", "", ".", "./", "a/\u{0}b", "../\u{301}up", "/\u{301}abs"])
        func anUnsafeArchivePathIsRefused(_ archivePath: String) async throws {
            let dir = try TemporaryDirectory()
            try dir.file("src/a.txt", "alpha")
            let archive = dir.path + "/u.tar.xz"
            let error = await expectArchiveError("archive path \(archivePath)") {
                try await ArchivePacker.pack(
                    [PackSource(path: dir.path + "/src", archivePath: archivePath)], to: .file(archive),
                    options: testOptions())
            }
            #expect(error?.code == .invalidArchivePath)
            #expect(!exists(archive))
            #expect(listing(dir.path) == ["src"], "no temporary file is left")
        }

        @Test(arguments: [
            (10, 1 << 20, 2), (-1, 1 << 20, 2), (6, (1 << 20) - 1, 2), (6, (1 << 30) + 1, 2), (6, 1 << 20, 0), (6, 1 << 20, 257)
        ])
        func unusableOptionsAreRefused(_ preset: Int, _ chunk: Int, _ workers: Int) async throws {
            let dir = try TemporaryDirectory()
            try dir.file("src/a.txt", "alpha")
            var options = PackOptions()
            options.preset = preset
            options.chunkSize = chunk
            options.workers = workers
            let error = await expectArchiveError("options") {
                try await ArchivePacker.pack([PackSource(path: dir.path + "/src")], to: .file(dir.path + "/o.tar.xz"), options: options)
            }
            #expect(error?.code == .invalidOptions)
            #expect(!exists(dir.path + "/o.tar.xz"))
        }

        @Test(arguments: ["a=b", "line\nbreak", "nul\u{0}"])
        func metadataThatCannotBeStoredIsRefusedAsAnOption(_ key: String) async throws {
            let dir = try TemporaryDirectory()
            try dir.file("src/a.txt", "alpha")
            let archive = dir.path + "/m.tar.xz"
            let error = await expectArchiveError("metadata key \(key.debugDescription)") {
                try await ArchivePacker.pack(
                    [PackSource(path: dir.path + "/src")], to: .file(archive),
                    options: testOptions(metadata: [key: "value"]))
            }
            #expect(error?.code == .invalidOptions)
            #expect(!exists(archive))
        }

        // MARK: - Stored blocks

        @Test(.enabled(if: toolExists("xz")))
        func incompressibleChunksAreStoredAndTextIsCompressed() async throws {
            let dir = try TemporaryDirectory()
            try await offPool {
                try dir.file("src/a-noise.bin", sampleBytes(count: 3 << 20, seed: 11, text: false))
                try dir.file("src/b-text.txt", sampleBytes(count: 3 << 20, seed: 12, text: true))
            }
            let archive = dir.path + "/s.tar.xz"
            let summary = try await ArchivePacker.pack([PackSource(path: dir.path + "/src")], to: .file(archive), options: testOptions())
            #expect(summary.blocks == 7)
            let blocks = try await xzToolBlocks(archive).prefix(summary.blocks)
            // Stored LZMA2 chunks are a little larger than their input; compressed text is far smaller.
            let stored = blocks.filter { $0.totalSize > $0.uncompressedSize }.count
            let compressed = blocks.filter { $0.totalSize < $0.uncompressedSize / 2 }.count
            #expect(summary.storedBlocks == stored)
            #expect(stored >= 2, "the blocks made only of noise are stored")
            #expect(compressed >= 2, "the blocks made only of text are compressed")
            #expect(try await ArchiveReader(path: archive).verify() == 3)
            #expect(try await runTool(["xz", "-t", archive]).status == 0)
        }

        @Test(.enabled(if: toolExists("xz")))
        func packingWithoutCompressionStoresEveryBlock() async throws {
            let dir = try TemporaryDirectory()
            try await offPool { try dir.file("src/text.txt", Samples.text2Point5M) }
            let archive = dir.path + "/s.tar.xz"
            var options = testOptions(preset: 6)
            options.compressible = false
            let summary = try await ArchivePacker.pack([PackSource(path: dir.path + "/src")], to: .file(archive), options: options)
            #expect(summary.blocks == 3)
            #expect(summary.storedBlocks == summary.blocks)
            #expect(summary.archiveBytes > summary.tarBytes)
            let blocks = try await xzToolBlocks(archive)
            #expect(blocks.prefix(summary.blocks).allSatisfy { $0.totalSize > $0.uncompressedSize })
            let reader = try ArchiveReader(path: archive)
            #expect(try await reader.verify() == 2)
            #expect(try await reader.contents(of: "src/text.txt") == Samples.text2Point5M)
            #expect(try await runTool(["xz", "-t", archive]).status == 0)
        }

        // MARK: - Summary, events, progress

        @Test(.enabled(if: toolExists("xz")))
        func theSummaryEventsAndProgressAgreeWithTheArchive() async throws {
            let dir = try TemporaryDirectory()
            let root = try await CompatTree.make(in: dir)
            let events = Mutex<[PackEvent]>([])
            let sources = [PackSource(path: root, archivePath: "src")]
            let progress = Progress(totalUnitCount: Int64(try await ArchivePacker.contentSize(of: sources)))
            var options = testOptions()
            options.onEvent = { event in events.withLock { $0.append(event) } }
            options.progress = progress
            let archive = dir.path + "/e.tar.xz"
            let summary = try await ArchivePacker.pack(sources, to: .file(archive), options: options)

            let source = try await TreeSnapshot.of(root)
            let uniqueBytes = source.items.filter {
                $0.value.type == "file" && !["hardlink-to-notes", "zz-hardlink-to-long-path"].contains($0.key)
            }.reduce(0) { $0 + $1.value.size }
            let blocks = try await xzToolBlocks(archive)
            #expect(summary.entries == source.items.count + 1)
            #expect(summary.fileBytes == UInt64(uniqueBytes))
            #expect(summary.tarBytes == blocks[blocks.count - 2].uncompressedOffset)
            #expect(summary.archiveBytes == UInt64(try await readBytes(archive).count))
            #expect(summary.blocks == blocks.count - 2)
            #expect(summary.warnings.isEmpty)

            let all = events.withLock { $0 }
            let stored = all.compactMap { if case .entryStored(let path, let bytes) = $0 { (path, bytes) } else { nil } }
            #expect(stored.count == summary.entries)
            #expect(stored.reduce(0) { $0 + $1.1 } == summary.fileBytes)
            let written = all.compactMap { if case .blockWritten(let sequence, let bytes) = $0 { (sequence, bytes) } else { nil } }
            #expect(written.map(\.0) == Array(0..<summary.blocks), "blocks are written in order")
            #expect(zip(written, written.dropFirst()).allSatisfy { $0.1 < $1.1 })
            #expect(written.enumerated().allSatisfy { $0.element.1 == blocks[$0.offset].compressedOffset + blocks[$0.offset].totalSize })
            let compressed = all.compactMap {
                if case .blockCompressed(let sequence, let isStored) = $0 { (sequence, isStored) } else { nil }
            }
            #expect(Set(compressed.map(\.0)) == Set(0..<summary.blocks))
            #expect(compressed.filter(\.1).count == summary.storedBlocks)
            let serialized = all.compactMap { if case .chunkSerialized(let sequence, _) = $0 { sequence } else { nil } }
            #expect(serialized == Array(0..<summary.blocks))

            #expect(progress.completedUnitCount == Int64(summary.fileBytes))
            #expect(progress.fractionCompleted == 1.0, "contentSize(of:) is the total that progress reaches (hard links counted once)")
        }

        // MARK: - Backpressure

        /// The most chunks serialized but not yet written at any moment of a pack.
        static func largestBacklog(workers: Int, memoryBudget: Int?, in dir: TemporaryDirectory) async throws -> Int {
            let progress = Mutex<(serialized: Int, written: Int, largest: Int)>((-1, -1, 0))
            var options = testOptions(preset: 1)
            options.workers = workers
            options.memoryBudget = memoryBudget
            options.onEvent = { event in
                progress.withLock { state in
                    switch event {
                    case .chunkSerialized(let sequence, _): state.serialized = max(state.serialized, sequence)
                    case .blockWritten(let sequence, _): state.written = max(state.written, sequence)
                    default: return
                    }
                    state.largest = max(state.largest, state.serialized - state.written)
                }
            }
            let summary = try await ArchivePacker.pack(
                [PackSource(path: dir.path + "/src")], to: .file(dir.path + "/bp.tar.xz"), options: options)
            #expect(summary.blocks == 10)
            return progress.withLock { $0.largest }
        }

        @Test func aFastReaderWaitsForSlowCompressors() async throws {
            let dir = try TemporaryDirectory()
            try await offPool { for i in 0..<4 { try dir.file("src/t\(i).txt", Samples.text2Point5M) } }
            // Reading runs at memory speed, compressing at a few MB/s: without backpressure the
            // serializer would run all ten chunks ahead of the writer.
            // One encoder and four chunks: one in flight, three on the serializer's side.
            let oneWorker = Int(try BlockEncoder.memoryUsage(preset: 1, maxChunkSize: 1 << 20)) + 4 << 20
            let budgeted = try await Self.largestBacklog(workers: 1, memoryBudget: oneWorker, in: dir)
            #expect(budgeted <= 3, "one chunk in flight, one handed over, one being filled: \(budgeted)")
            let standard = try await Self.largestBacklog(workers: 1, memoryBudget: nil, in: dir)
            #expect(standard <= 3, "by default one chunk compressing per worker, one handed over, one held for the tail: \(standard)")
        }

        /// Issue #12: one budget counts each worker's encoder and chunk and the serializer's
        /// chunks; the early chunk goes first, then workers, and a budget short of one worker is
        /// refused.
        @Test func theMemoryBudgetCountsEncodersAndChunks() throws {
            var options = PackOptions()
            options.preset = 6
            options.chunkSize = 16 << 20
            options.workers = 2
            let chunk = 16 << 20
            let encoder = Int(try BlockEncoder.memoryUsage(preset: 6, maxChunkSize: chunk))
            #expect(encoder > 80 << 20, "preset 6's match finder and dictionary: \(encoder)")
            func resolved(_ budget: Int?) throws -> [Int] {
                options.memoryBudget = budget
                let valid = try options.validated()
                return [valid.workers, valid.chunksInFlight]
            }
            #expect(try resolved(nil) == [2, 3], "by default: one chunk per worker and one done early")
            #expect(try resolved(2 * encoder + 6 * chunk) == [2, 3])
            #expect(try resolved(2 * encoder + 5 * chunk) == [2, 2], "the early chunk goes first")
            #expect(try resolved(2 * encoder + 5 * chunk - 1) == [1, 2], "then a worker")
            #expect(try resolved(encoder + 4 * chunk) == [1, 1])
            let error = #expect(throws: ArchiveError.self) { try resolved(encoder + 4 * chunk - 1) }
            #expect(error?.code == .invalidOptions)
            #expect(error?.message.contains("cannot hold one worker") == true, "\(String(describing: error))")

            options.compressible = false
            options.memoryBudget = 5 * chunk
            #expect(try options.validated().workers == 2, "storing needs no encoder")
        }

        /// Issue 11: a compression three times longer than the read stage's timeout holds the
        /// reader back (backpressure), and that wait is not a stall of the read stage.
        @Test func waitingForASlowCompressorIsNotAReadStall() async throws {
            let dir = try TemporaryDirectory()
            try await offPool { for i in 0..<3 { try dir.file("src/t\(i).txt", Samples.text2Point5M) } }
            var options = testOptions(chunk: 1 << 20)
            options.workers = 1
            options.stallPolicy = WatchdogPolicy(
                stallTimeouts: [.read: .milliseconds(300), .enumerate: .milliseconds(300)],
                defaultStallTimeout: .seconds(60), checkInterval: .milliseconds(10))
            options.compressionHook = { _ in usleep(900_000) }
            let summary = try await ArchivePacker.pack(
                [PackSource(path: dir.path + "/src")], to: .file(dir.path + "/slow.tar.xz"),
                options: options)
            #expect(summary.blocks >= 8)
            #expect(try await ArchiveReader(path: dir.path + "/slow.tar.xz").verify() == 4)
        }

        /// Issue 11: with two compressors, one stuck block is named even while the other compresses.
        @Test func aStuckCompressionIsNamedWhileItsSiblingWorks() async throws {
            let dir = try TemporaryDirectory()
            try await offPool { for i in 0..<3 { try dir.file("src/t\(i).txt", Samples.text2Point5M) } }
            var options = testOptions(chunk: 1 << 20)
            options.workers = 2
            options.stallPolicy = WatchdogPolicy(
                stallTimeouts: [.compress: .milliseconds(500)], defaultStallTimeout: .seconds(60),
                gracePeriod: .seconds(30), checkInterval: .milliseconds(10))
            // Block 2 sleeps in slices, checking for cancellation, and never beats.
            options.compressionHook = { sequence in
                guard sequence == 2 else { return }
                for _ in 0..<600 {
                    usleep(50_000)
                    try Task.checkCancellation()
                }
            }
            let error = await expectArchiveError("stuck block") {
                try await ArchivePacker.pack([PackSource(path: dir.path + "/src")], to: .file(dir.path + "/stuck.tar.xz"), options: options)
            }
            #expect(error?.code == .stalled || error?.code == .terminated, "\(String(describing: error))")
            #expect(error?.message.contains("stage 'compress' (block 2)") == true, "\(String(describing: error))")
            #expect(!exists(dir.path + "/stuck.tar.xz"))
        }

        // MARK: - Cancellation

        /// About 48 MB of text-like bytes (random letters and spaces) that preset 6 compresses slowly.
        static func slowText(_ count: Int) -> [UInt8] {
            var out = [UInt8](repeating: 0, count: count)
            var x: UInt64 = 0x9E37_79B9_7F4A_7C15
            out.withUnsafeMutableBufferPointer { buffer in
                for i in 0..<count {
                    x ^= x << 13
                    x ^= x >> 7
                    x ^= x << 17
                    let r = Int(x % 32)
                    buffer[i] = r < 26 ? UInt8(97 + r) : (r < 30 ? 32 : 10)
                }
            }
            return out
        }

        @Test func aCancelledPackThrowsCancellationErrorAndLeavesNothing() async throws {
            let dir = try TemporaryDirectory()
            try await offPool {
                let text = Self.slowText(8 << 20)
                for i in 0..<6 { try dir.file("src/part\(i).txt", text) }
            }
            let destination = dir.path + "/big.tar.xz"
            var options = PackOptions()
            options.preset = 6
            options.workers = 2
            let source = dir.path + "/src"
            let task = Task {
                try await ArchivePacker.pack([PackSource(path: source)], to: .file(destination), options: options)
            }
            try await Task.sleep(for: .milliseconds(100))
            let cancelled = ContinuousClock.now
            task.cancel()
            let result = await task.result
            let latency = ContinuousClock.now - cancelled
            switch result {
            case .success: Issue.record("the pack finished although it was cancelled")
            case .failure(let error): #expect(error is CancellationError, "got \(type(of: error)): \(error)")
            }
            // The whole pack takes about a minute here; a loaded machine has delayed answers by
            // 25 s at the start of a test run.
            #expect(latency < .seconds(30), "cancellation took \(latency)")
            #expect(!exists(destination))
            #expect(listing(dir.path) == ["src"], "no temporary file is left: \(listing(dir.path))")
        }

        @Test func aReaderThatGoesAwayIsAnErrorNotADeadProcess() async throws {
            let dir = try TemporaryDirectory()
            let root = try Self.makeTree(in: dir)
            var fds: [Int32] = [0, 0]
            #expect(pipe(&fds) == 0)
            close(fds[0])
            defer { close(fds[1]) }
            // Without care, SIGPIPE would kill the test process here.
            let error = await #expect(throws: ArchiveError.self) {
                try await ArchivePacker.pack(
                    [PackSource(path: root, archivePath: "src")], to: .fileDescriptor(fds[1]),
                    options: Self.options())
            }
            #expect(error?.code == .io(errno: EPIPE))
        }
    }
}
