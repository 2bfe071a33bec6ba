import Foundation
import TestSupport
import Testing

@testable import IndexedArchive

extension EngineSuites {
    /// format-study §5.4: our archives read by stock tools, and stock tools' archives read by us.
    @Suite struct InteropTests {
        // MARK: - Stock tools read our archives

        @Test(.enabled(if: toolExists("xz")))
        func xzTestsAndListsOneStreamWithSizesInHeaders() async throws {
            let packed = try await PackedTree.make()
            let test = try await runTool(["xz", "-t", packed.archive])
            #expect(test.status == 0)
            #expect(test.stderr.isEmpty)

            let list = try await runTool(["xz", "-lvv", packed.archive])
            #expect(list.status == 0)
            let text = list.stdoutString
            func value(_ label: String) -> [String] {
                text.split(separator: "\n").compactMap { line -> String? in
                    let trimmed = line.trimmingCharacters(in: .whitespaces)
                    guard trimmed.hasPrefix(label + ":") else { return nil }
                    return trimmed.dropFirst(label.count + 1).trimmingCharacters(in: .whitespaces)
                }
            }
            // xz 5.4.1 prints the summary lines "Streams: 1", "Blocks: N", "Check: CRC64" and
            // "Sizes in headers:  Yes" (the first "Streams:"/"Blocks:" are the counts, the later ones
            // introduce the tables).
            #expect(value("Streams").first == "1")
            #expect(value("Blocks").first == String(packed.summary.blocks + 2), "data blocks + rich index + pixz index")
            #expect(value("Check").first == "CRC64")
            #expect(value("Sizes in headers") == ["Yes"])
            #expect(packed.summary.blocks >= 4, "the tree spans several 1 MiB chunks")

            let blocks = try await xzToolBlocks(packed.archive)
            #expect(blocks.count == packed.summary.blocks + 2)
            for (i, block) in blocks.enumerated() {
                #expect(block.check == "CRC64", "block \(i)")
                #expect(block.flags == "cu", "block \(i) must carry both sizes in its header")
                if i < packed.summary.blocks - 1 { #expect(block.uncompressedSize == 1 << 20, "data block \(i) is one chunk") }
            }
            let rich = blocks[blocks.count - 2]
            #expect(rich.uncompressedOffset == packed.summary.tarBytes, "the rich index starts where the tar stream ends")
            let fileSize = try FileManager.default.attributesOfItem(atPath: packed.archive)[.size] as? Int
            #expect(UInt64(fileSize ?? 0) == packed.summary.archiveBytes)

            // The decompressed stream: pax global header first, tar end marker, then the two indexes.
            let raw = try await runTool(["xz", "-dc", packed.archive])
            #expect(raw.status == 0)
            let bytes = raw.stdout
            let tarSize = Int(packed.summary.tarBytes)
            #expect(bytes[156] == UInt8(ascii: "g"), "a pax global header opens the tar stream")
            #expect(bytes[tarSize - 1024..<tarSize].allSatisfy { $0 == 0 }, "exactly the 1024-byte end marker")
            #expect(Array(bytes[tarSize..<tarSize + 8]) == Array("AMKINDEX".utf8))
            let pixzStart = Int(blocks[blocks.count - 1].uncompressedOffset)
            #expect(Array(bytes[pixzStart..<pixzStart + 8]) == [0xa6, 0x4c, 0x32, 0x2e, 0xd6, 0x14, 0xae, 0xdb])
        }

        @Test(.enabled(if: toolExists("tar") && toolExists("xz")))
        func gnuTarExtractsTheIdenticalTree() async throws {
            let packed = try await PackedTree.make()
            let source = try await TreeSnapshot.of(packed.root)
            let dir = packed.dir.path

            for (name, arguments) in [("out1", ["tar", "-xpJf"]), ("out2", ["tar", "-xpf"])] {
                try FileManager.default.createDirectory(atPath: "\(dir)/\(name)", withIntermediateDirectories: false)
                let result = try await runTool(arguments + [packed.archive, "-C", "\(dir)/\(name)"])
                #expect(result.status == 0, "\(arguments): \(result.stderr)")
                #expect(result.stderr.isEmpty, "\(arguments) must not warn: \(result.stderr)")
                // Whole seconds: the nanoseconds are in amk's index, not in the tar headers.
                expectSameTree(source.truncatingNanoseconds(), try await TreeSnapshot.of("\(dir)/\(name)/src"), "\(arguments)")
            }
            var a = stat()
            var b = stat()
            lstat("\(dir)/out1/src/docs/notes.txt", &a)
            lstat("\(dir)/out1/src/hardlink-to-notes", &b)
            #expect(a.st_ino == b.st_ino, "GNU tar restores the hard link")
            if runningAsRoot {
                lstat("\(dir)/out1/src/owned.txt", &a)
                #expect(a.st_uid == CompatTree.bigUID && a.st_gid == CompatTree.bigGID, "uid/gid above 2097151 via pax")
            }

            let listing = try await runTool(["tar", "-tvJf", packed.archive])
            #expect(listing.status == 0)
            #expect(listing.stderr.isEmpty, "the pax global header is ignored silently: \(listing.stderr)")
            #expect(listing.stdoutString.split(separator: "\n").count == packed.summary.entries)

            // The tar headers carry whole seconds (nanoseconds live in the index, issue #12), and
            // GNU tar compares a pax archive's times to the nanosecond: every difference it finds
            // must be a time, none content, mode, size, link or type.
            let compare = try await runTool(["tar", "--compare", "-Jf", packed.archive], in: dir)
            let differences = compare.stdoutString.split(separator: "\n")
            #expect(
                compare.status == 0 || differences.allSatisfy { $0.hasSuffix(": Mod time differs") },
                "tar --compare: \(differences) \(compare.stderr)")

            try FileManager.default.createDirectory(atPath: "\(dir)/out4", withIntermediateDirectories: false)
            // Only tar's status counts: xz may die of SIGPIPE when tar stops reading at the end marker.
            let piped = try await runShell("xz -dc '\(packed.archive)' | tar -xpf - -C '\(dir)/out4'; exit ${PIPESTATUS[1]}")
            #expect(piped.status == 0, "\(piped.stderr)")
            expectSameTree(source.truncatingNanoseconds(), try await TreeSnapshot.of("\(dir)/out4/src"), "xz -dc | tar -x")
        }

        /// A folder whose files are grouped by type (``WalkOrder/type``), with folders that are
        /// private, read-only and nested, extracted without privilege by GNU tar and by bsdtar
        /// without `-p`: each folder's members follow it, so neither tool meets a folder's files
        /// after leaving it (GNU tar would then give it the extraction's time, or fail to write
        /// into a read-only one) nor a folder after its files (bsdtar would keep the mode it
        /// created it with).
        @Test(
            .enabled(
                if: toolExists("tar") && toolExists("bsdtar")
                    && (!runningAsRoot || FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"))))
        func byTypeEveryFolderKeepsItsModeAndTimeWithStockToolsUnprivileged() async throws {
            let dir = try TemporaryDirectory()
            let root = dir.path + "/tree"
            for folder in ["", "/private", "/readonly", "/readonly/sub.d"] {
                for (i, name) in ["b.txt", "a.h", "c.txt", "b.c", "a.c", "Notes", "z.h"].enumerated() {
                    try createFile(root + folder + "/" + name, sampleBytes(count: 300 + i * 50, seed: UInt64(i), text: true))
                }
            }
            chmod(root + "/private", 0o700)
            chmod(root + "/readonly/sub.d", 0o750)
            chmod(root + "/readonly", 0o555)
            defer { chmod(root + "/readonly", 0o755) }
            for (offset, path) in [root + "/readonly/sub.d", root + "/readonly", root + "/private", root].enumerated() {
                var times = [timespec(tv_sec: 1_000_000_000 + offset * 86_400, tv_nsec: 0), timespec()]
                times[1] = times[0]
                #expect(utimensat(AT_FDCWD, path, times, AT_SYMLINK_NOFOLLOW) == 0)
            }
            let source = try await TreeSnapshot.of(root)
            let archive = dir.path + "/t.tar.xz"
            _ = try await ArchivePacker.pack([PackSource(path: root, archivePath: "tree")], to: .file(archive), options: testOptions())

            let names = try await ArchiveReader(path: archive).entries().map(\.name)
            #expect(
                Array(names.prefix(9)) == [
                    "tree", "tree/Notes", "tree/private", "tree/private/Notes", "tree/private/a.c", "tree/private/b.c",
                    "tree/private/a.h", "tree/private/z.h", "tree/private/b.txt"
                ], "grouped by extension, each folder's members after it: \(names)")

            // The unprivileged user may enter everything above its output folders.
            chmod(dir.path, 0o777)
            let unprivileged = runningAsRoot ? "/usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups " : ""
            for (name, tool) in [("gnu", "tar -xf"), ("bsd", "bsdtar -xf")] {
                let out = dir.path + "/" + name
                try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: false)
                chmod(out, 0o777)
                let result = try await runShell("umask 022; \(unprivileged)\(tool) '\(archive)' -C '\(out)'")
                #expect(result.status == 0, "\(tool): \(result.stderr)")
                defer { chmod(out + "/tree/readonly", 0o755) }
                expectSameTree(source.truncatingNanoseconds(), try await TreeSnapshot.of(out + "/tree"), "\(tool), unprivileged")
            }
        }

        @Test(.enabled(if: toolExists("bsdtar")))
        func bsdtarExtractsTheIdenticalTree() async throws {
            let packed = try await PackedTree.make()
            let out = packed.dir.path + "/out3"
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: false)
            let result = try await runTool(["bsdtar", "-xpf", packed.archive, "-C", out])
            #expect(result.status == 0)
            #expect(result.stderr.isEmpty, "\(result.stderr)")
            expectSameTree(
                try await TreeSnapshot.of(packed.root).truncatingNanoseconds(), try await TreeSnapshot.of(out + "/src"), "bsdtar -xpf")
            var info = stat()
            lstat(out + "/src/long-link", &info)
            #expect(info.st_mode & S_IFMT == S_IFLNK, "a long symlink target stays a symlink (not an empty file)")

            let listing = try await runTool(["bsdtar", "-tvf", packed.archive])
            #expect(listing.status == 0)
            #expect(listing.stderr.isEmpty, "\(listing.stderr)")
            #expect(listing.stdoutString.split(separator: "\n").count == packed.summary.entries)
        }

        @Test(.enabled(if: toolExists("pixz") && toolExists("tar")))
        func pixzListsAndExtractsThroughOurIndex() async throws {
            let packed = try await PackedTree.make()
            let entries = try await ArchiveReader(path: packed.archive).entries()

            let list = try await runTool(["pixz", "-l", packed.archive])
            #expect(list.status == 0, "\(list.stderr)")
            let names = list.stdoutString.split(separator: "\n").map(String.init)
            #expect(names == entries.map(\.path))
            #expect(names.count == packed.summary.entries)

            for (member, original) in [
                ("src/docs/big.json", Samples.text2Point5M),
                ("src/ünïcödé-名前.txt", Array("unicode\n".utf8)),
                ("src/\(CompatTree.over255)", Array("over 255 bytes".utf8))
            ] {
                let result = try await runShell("pixz -x '\(member)' < '\(packed.archive)' | tar -xOf - '\(member)'")
                #expect(result.status == 0, "\(member): \(result.stderr)")
                #expect(result.stdout == original, "pixz -x \(member)")
            }

            let decompress = try await runShell("pixz -d < '\(packed.archive)' > /dev/null")
            #expect(decompress.status == 0, "pixz -d cross-checks its index against the tar: \(decompress.stderr)")
        }

        @Test(.enabled(if: toolExists("python3")))
        func pythonTarfileListsEveryMember() async throws {
            let packed = try await PackedTree.make()
            let script = "import tarfile,sys\nfor m in tarfile.open(sys.argv[1]).getmembers(): print(m.name)"
            let result = try await runTool(["python3", "-c", script, packed.archive])
            #expect(result.status == 0, "\(result.stderr)")
            let names = result.stdoutString.split(separator: "\n").map(String.init)
            #expect(names.count == packed.summary.entries)
            let ours = try await ArchiveReader(path: packed.archive).entries().map(\.name)
            #expect(names == ours)
        }

        @Test(.enabled(if: toolExists("xz") && toolExists("tar")))
        func stockToolsCatchTruncation() async throws {
            let packed = try await PackedTree.make()
            let dir = packed.dir.path
            let bytes = try await readBytes(packed.archive)

            try await writeBytes(dir + "/T.xz", bytes.dropLast())
            #expect(try await runTool(["xz", "-t", dir + "/T.xz"]).status != 0, "xz -t must notice one missing byte")
            try FileManager.default.createDirectory(atPath: dir + "/t", withIntermediateDirectories: false)
            #expect(
                try await runTool(["tar", "-xJf", dir + "/T.xz", "-C", dir + "/t"]).status != 0, "tar -xJf must notice one missing byte")

            // Cut exactly at every block boundary: each is still a run of whole blocks, which only
            // the missing xz Index gives away.
            let blocks = try await xzToolBlocks(packed.archive)
            #expect(blocks.count == packed.summary.blocks + 2)
            for block in blocks.dropFirst() {
                try await writeBytes(dir + "/T2.xz", bytes.prefix(Int(block.compressedOffset)))
                let result = try await runTool(["xz", "-t", dir + "/T2.xz"])
                #expect(result.status != 0, "cut at \(block.compressedOffset) must fail xz -t")
            }
            let end = blocks.last!.compressedOffset + blocks.last!.totalSize
            try await writeBytes(dir + "/T3.xz", bytes.prefix(Int(end)))
            #expect(try await runTool(["xz", "-t", dir + "/T3.xz"]).status != 0, "cut before the xz Index must fail xz -t")
        }

        // MARK: - We read stock tools' archives

        enum Foreign: String, CaseIterable, Sendable {
            case gnuTarPosix, gnuTarDefault, xzMultiBlock, pixz, twoStreams
        }

        @Test(.enabled(if: toolExists("tar") && toolExists("xz")))
        func readsAnArchiveOfTheCurrentDirectory() async throws {
            // tar -C dir -cf - . is the common way to archive a directory's contents: every member
            // starts with "./", the first is "./" itself.
            let dir = try TemporaryDirectory()
            let root = try await CompatTree.make(in: dir)
            let archive = dir.path + "/dot.tar.xz"
            #expect(try await runTool(["tar", "--format=posix", "-C", root, "-cJf", archive, "."]).status == 0)
            let reader = try ArchiveReader(path: archive)
            let entries = try await reader.entries()
            #expect(entries.first?.path == "./")
            #expect(try await reader.contents(of: "./docs/big.json") == Samples.text2Point5M)
            let out = dir.path + "/out"
            try await reader.extract(to: out)
            expectSameTree(try await TreeSnapshot.of(root).droppingSetIDBits(), try await TreeSnapshot.of(out), "tar -C src -c .")
        }

        /// pixz's smallest archive: one block of tar stream and its file index, which `pixz -l`
        /// lists. It was counted as two data blocks with no pixz index (only an archive of three
        /// blocks or more was looked at for one).
        @Test(.enabled(if: toolExists("tar") && toolExists("pixz")))
        func pixzsFileIndexIsSeenInItsSmallestArchive() async throws {
            let dir = try TemporaryDirectory()
            try FileManager.default.createDirectory(atPath: dir.path + "/notes", withIntermediateDirectories: true)
            try await writeBytes(dir.path + "/notes/todo.txt", Array("buy milk\n".utf8))
            let archive = dir.path + "/px.tar.xz"
            let made = try await runShell("tar -cf - notes | pixz > px.tar.xz", in: dir.path)
            try #require(made.status == 0, "\(made.stderr)")
            try #require(try await xzToolBlocks(archive).count == 2)
            let reader = try ArchiveReader(path: archive)
            let info = try await reader.info()
            #expect(info.hasPixzIndex)
            #expect(info.blocks == 2 && info.dataBlocks == 1, "\(info.blocks) blocks, \(info.dataBlocks) data")
            // Read as before: the file index follows the tar stream and is not a member.
            #expect(try await reader.entries().map(\.name) == ["notes", "notes/todo.txt"])
            #expect(try await reader.contents(of: "notes/todo.txt") == Array("buy milk\n".utf8))
            #expect(try await reader.verify() == 2)
        }

        @Test(.enabled(if: toolExists("tar") && toolExists("xz") && toolExists("pixz")), arguments: Foreign.allCases)
        func readsForeignArchivesSequentially(_ kind: Foreign) async throws {
            let dir = try TemporaryDirectory()
            let root = try await CompatTree.make(in: dir)
            let archive = dir.path + "/F.tar.xz"
            switch kind {
            case .gnuTarPosix:
                #expect(try await runTool(["tar", "--format=posix", "-cJf", archive, "src"], in: dir.path).status == 0)
            case .gnuTarDefault:
                #expect(try await runTool(["tar", "-cJf", archive, "src"], in: dir.path).status == 0)
            case .xzMultiBlock:
                let result = try await runShell("tar --format=posix -cf - src | xz -T2 --block-size=1MiB > '\(archive)'", in: dir.path)
                #expect(result.status == 0, "\(result.stderr)")
                #expect(try await xzToolBlocks(archive).count >= 3, "several blocks")
            case .pixz:
                let result = try await runTool(["tar", "--format=posix", "-Ipixz", "-cf", archive, "src"], in: dir.path)
                #expect(result.status == 0, "\(result.stderr)")
            case .twoStreams:
                // Two streams that each hold half of one tar stream (cut mid-member).
                let tar = try await runTool(["tar", "--format=posix", "-cf", "-", "src"], in: dir.path)
                #expect(tar.status == 0)
                let half = tar.stdout.count / 2 + 123
                let first = try await runTool(["xz", "-c", "-0"], stdin: Array(tar.stdout.prefix(half)))
                let second = try await runTool(["xz", "-c", "-0"], stdin: Array(tar.stdout[half...]))
                try await writeBytes(archive, first.stdout + second.stdout)
                #expect(try await runTool(["xz", "-lv", archive]).stdout.count > 0)
            }

            let reader = try ArchiveReader(path: archive)
            #expect(reader.mode == .sequential)
            let source = try await TreeSnapshot.of(root)
            let entries = try await reader.entries()
            #expect(Set(entries.map(\.name)) == Set(["src"] + source.items.keys.map { "src/" + $0 }))
            #expect(entries.count == source.items.count + 1)
            #expect(entries.first { $0.name == "src/dangling" }?.linkTarget == CompatTree.danglingTarget)
            #expect(entries.first { $0.name == "src/long-link" }?.linkTarget == CompatTree.over255)
            #expect(entries.first { $0.name == "src/docs/big.json" }?.size == UInt64(Samples.text2Point5M.count))

            #expect(try await reader.contents(of: "src/docs/big.json") == Samples.text2Point5M)
            #expect(try await reader.contents(of: "src/ünïcödé-名前.txt") == Array("unicode\n".utf8))
            #expect(try await reader.contents(of: "src/\(CompatTree.component200)") == Array("a 200-byte component".utf8))
            // Listing, verifying and extracting go block by block (in parallel) through the xz
            // Index: each of them decodes every block once.
            let blocks = try await xzToolBlocks(archive).count
            // What `amk info` says: pixz's file index is its last block, not tar stream.
            let info = try await reader.info()
            #expect(info.blocks == blocks)
            #expect(info.hasPixzIndex == (kind == .pixz), "\(kind)")
            #expect(info.dataBlocks == (kind == .pixz ? blocks - 1 : blocks), "\(kind)")
            #expect(!info.isIndexed)
            let decodesBefore = reader.blockDecodeCount
            #expect(try await reader.verify() == entries.count)
            #expect(reader.blockDecodeCount - decodesBefore == blocks, "\(kind): verify decodes each block")
            #expect(try await reader.metadata().isEmpty, "no pax global header, no metadata")

            let out = dir.path + "/out"
            let extractBefore = reader.blockDecodeCount
            try await reader.extract(to: out)
            #expect(reader.blockDecodeCount - extractBefore == blocks, "\(kind): extract decodes each block")
            let extracted = try await TreeSnapshot.of(out + "/src")
            if kind == .gnuTarDefault {
                expectSameTree(source.truncatingNanoseconds().droppingSetIDBits(), extracted, "\(kind)")
            } else {
                expectSameTree(source.droppingSetIDBits(), extracted, "\(kind)")
            }
            var a = stat()
            var b = stat()
            lstat(out + "/src/docs/notes.txt", &a)
            lstat(out + "/src/hardlink-to-notes", &b)
            #expect(a.st_ino == b.st_ino, "\(kind): the hard link shares the inode")
        }

        // MARK: - Members out of walk order (issue #12)

        /// A tree whose incompressible files go apart into stored blocks (an option, off by
        /// default): text, `.gz` and `.png`
        /// names over random bytes, a gzip signature without the name, a hard-linked `.gz` (which
        /// must stay in order: its link follows it), nested and restricted folders.
        static func mixedTree(in dir: TemporaryDirectory) async throws -> String {
            try await offPool {
                let root = dir.path + "/mixed"
                for d in 0..<3 {
                    try dir.file("mixed/d\(d)/readme.txt", Samples.text40K)
                    try dir.file("mixed/d\(d)/data-\(d).gz", sampleBytes(count: 40_000 + d, seed: UInt64(10 + d), text: false))
                    try dir.file("mixed/d\(d)/sub/notes.md", Array(Samples.text2Point5M.prefix(300_000)))
                    try dir.file("mixed/d\(d)/sub/picture.PNG", sampleBytes(count: 90_000, seed: UInt64(20 + d), text: false))
                }
                try dir.file("mixed/big/photo.jpg", Samples.noise1Point2M)
                try dir.file("mixed/big/log.txt", Samples.text2Point5M)
                try dir.file("mixed/magic-without-name", [0x1f, 0x8b, 0x08] + sampleBytes(count: 30_000, seed: 31, text: false))
                try dir.file("mixed/linked/archive.tar.gz", sampleBytes(count: 50_000, seed: 32, text: false))
                link(root + "/linked/archive.tar.gz", root + "/linked/a-link.tgz")
                link(root + "/linked/archive.tar.gz", root + "/zz-later-link.gz")
                try dir.file("mixed/private/secret.gz", sampleBytes(count: 20_000, seed: 33, text: false), mode: 0o600)
                chmod(root + "/private", 0o700)
                chmod(root + "/d1/sub", 0o555)
                CompatTree.setTimes(root)
                return root
            }
        }

        @Test(.enabled(if: toolExists("tar") && toolExists("xz")))
        func incompressibleFilesGoApartAndEveryToolExtractsTheSameTree() async throws {
            let dir = try TemporaryDirectory()
            let root = try await Self.mixedTree(in: dir)
            let source = try await TreeSnapshot.of(root)
            let archive = dir.path + "/m.tar.xz"
            var options = testOptions(chunk: 4 << 20)
            options.workers = 2
            options.gathersIncompressibleApart = true
            let summary = try await ArchivePacker.pack([PackSource(path: root, archivePath: "mixed")], to: .file(archive), options: options)
            #expect(summary.storedBlocks >= 1, "the incompressible files make a stored block")
            #expect(summary.blocks > summary.storedBlocks, "and the text compressed blocks")

            // Order: the files gathered apart come after the rest; the hard-linked one stays in
            // place, before both its links.
            let reader = try ArchiveReader(path: archive)
            let names = try await reader.entries().map(\.name)
            let position = { (name: String) in names.firstIndex(of: "mixed/" + name) ?? -1 }
            #expect(position("d0/data-0.gz") > position("d2/readme.txt"), "\(names)")
            #expect(position("big/photo.jpg") > position("big/log.txt"))
            #expect(
                position("magic-without-name") > position("private/secret.gz")
                    || position("magic-without-name") > position("d2/sub/notes.md"))
            #expect(
                position("linked/a-link.tgz") > position("linked/archive.tar.gz")
                    || position("linked/archive.tar.gz") > position("linked/a-link.tgz"),
                "both present")
            let target = min(position("linked/a-link.tgz"), position("linked/archive.tar.gz"))
            #expect(
                target >= 0 && target < position("zz-later-link.gz") && target < position("d0/data-0.gz"),
                "the linked file is stored in walk order, before its links and before the files apart")

            // amk: every byte, mode, link and nanosecond.
            let amkOut = dir.path + "/amk"
            try await reader.extract(to: amkOut)
            expectSameTree(source.droppingSetIDBits(), try await TreeSnapshot.of(amkOut + "/mixed"), "amk extract")
            let one = dir.path + "/one"
            try await reader.extract(
                to: one,
                options: {
                    var o = ExtractOptions()
                    o.members = ["mixed/d1"]
                    return o
                }())
            let d1 = try await TreeSnapshot.of(one + "/mixed/d1")
            #expect(d1.items.count == source.items.keys.filter { $0.hasPrefix("d1/") }.count, "\(d1.description)")
            #expect(try await reader.verify() == names.count)

            // Stock tools: the same tree, times to the second. GNU tar sets a folder's time when
            // it leaves the folder, before the gathered files arrive: the known reason the option
            // is off by default (PackOptions.gathersIncompressibleApart), so folders' times are
            // left out for it here.
            let expected = source.truncatingNanoseconds()
            let withoutFolderTimes = try await offPool { try TreeSnapshot(root, timesOfDirectories: false) }.truncatingNanoseconds()
            for (name, arguments) in [("gnu", ["tar", "-xpf"])] + (toolExists("bsdtar") ? [("bsd", ["bsdtar", "-xpf"])] : []) {
                let out = dir.path + "/" + name
                try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: false)
                let result = try await runTool(arguments + [archive, "-C", out])
                #expect(result.status == 0 && result.stderr.isEmpty, "\(arguments): \(result.stderr)")
                if name == "gnu" {
                    expectSameTree(
                        withoutFolderTimes, try await offPool { try TreeSnapshot(out + "/mixed", timesOfDirectories: false) },
                        "\(arguments)")
                } else {
                    expectSameTree(expected, try await TreeSnapshot.of(out + "/mixed"), "\(arguments)")
                }
                var a = stat()
                var b = stat()
                lstat(out + "/mixed/linked/archive.tar.gz", &a)
                lstat(out + "/mixed/zz-later-link.gz", &b)
                #expect(a.st_ino == b.st_ino && a.st_nlink == 3, "\(arguments) restores the hard links")
            }
            let piped = dir.path + "/piped"
            try FileManager.default.createDirectory(atPath: piped, withIntermediateDirectories: false)
            let result = try await runShell("xz -dc '\(archive)' | tar -xpf - -C '\(piped)'; exit ${PIPESTATUS[1]}")
            #expect(result.status == 0, "\(result.stderr)")
            expectSameTree(
                withoutFolderTimes, try await offPool { try TreeSnapshot(piped + "/mixed", timesOfDirectories: false) }, "xz -dc | tar -x")
            if toolExists("pixz") {
                let listed = try await runTool(["pixz", "-l", archive])
                #expect(listed.status == 0, "pixz lists it: \(listed.stderr)")
            }
        }
    }
}
