// Interoperability with the stock tools, run with LC_ALL=C.UTF-8: archives written by
// TarEncoder must extract identically with GNU tar and bsdtar (rc 0, empty stderr) and open in
// Python's tarfile; archives written by GNU tar must parse to the same members; and a member
// above 8 GiB must stream through both TarParser and GNU tar without touching the disk.

import Foundation
import Tar
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// MARK: - Fixture tree

/// A directory tree covering every case of the writer rules (see format-study.md §5.4).
struct FixtureTree {
    let directory: TemporaryDirectory
    var root: URL { directory.url }
    var source: URL { root.appendingPathComponent("src") }
    let isRoot = getuid() == 0

    static let deepPath =
        "deep/" + (1...12).map { "component-\($0 < 10 ? "0" : "")\($0)-abcdefghijklm" }.joined(separator: "/") + "/leaf.txt"
    static let longComponent = String(repeating: "c", count: 196) + ".txt"
    static let danglingTarget = "does-not-exist/" + String(repeating: "d", count: 140) + "/nowhere.txt"

    init() throws {
        directory = try TemporaryDirectory(prefix: "tar-interop")
        try build()
    }

    private func path(_ relative: String) -> String { source.appendingPathComponent(relative).path }

    private func mkdir(_ relative: String, _ mode: mode_t) throws {
        try FileManager.default.createDirectory(atPath: path(relative), withIntermediateDirectories: true)
        try check(chmod(path(relative), mode), "chmod \(relative)")
    }

    private func file(_ relative: String, _ bytes: [UInt8], _ mode: mode_t = 0o644) throws {
        let parent = (relative as NSString).deletingLastPathComponent
        if !parent.isEmpty { try FileManager.default.createDirectory(atPath: path(parent), withIntermediateDirectories: true) }
        guard FileManager.default.createFile(atPath: path(relative), contents: Data(bytes)) else {
            throw CocoaError(.fileWriteUnknown)
        }
        try check(chmod(path(relative), mode), "chmod \(relative)")
    }

    private func symlink(_ relative: String, _ target: String) throws {
        try FileManager.default.createSymbolicLink(atPath: path(relative), withDestinationPath: target)
    }

    private func check(_ result: Int32, _ what: String) throws {
        if result != 0 { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO, userInfo: [NSLocalizedDescriptionKey: what]) }
    }

    private func build() throws {
        var rng = SeededGenerator(seed: 2024)
        try FileManager.default.createDirectory(at: source, withIntermediateDirectories: true)
        try file("empty.txt", [])
        try file("block512.bin", (0..<512).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        try file("data.bin", (0..<100_000).map { _ in UInt8.random(in: 0...255, using: &rng) })
        try file("private.txt", Array("secret\n".utf8), 0o600)
        try file("script.sh", Array("#!/bin/sh\necho hi\n".utf8), 0o755)
        try file("setuid-tool", Array("suid\n".utf8), 0o4755)
        try mkdir("sticky", 0o1777)
        try file("sticky/inside.txt", Array("in sticky\n".utf8))
        try mkdir("dir0750", 0o750)
        try mkdir("dir0750/empty-dir", 0o755)
        try file("\u{FC}n\u{EF}c\u{F6}d\u{E9}-\u{540D}\u{524D}.txt", Array("unicode\n".utf8))
        try file("emoji-\u{1F389}/\u{DF}.txt", Array("emoji\n".utf8))
        try file(Self.deepPath, Array("deep leaf\n".utf8))
        try file("medium/" + String(repeating: "m", count: 60) + "/" + String(repeating: "n", count: 50) + ".txt", Array("medium\n".utf8))
        try file("c200/" + Self.longComponent, Array("long component\n".utf8))
        try symlink("link-rel", "data.bin")
        try symlink("link-dangling", Self.danglingTarget)
        try symlink("link-utf8", "\u{FC}n\u{EF}c\u{F6}d\u{E9}-\u{540D}\u{524D}.txt")
        try symlink("link-long", Self.deepPath)
        // Named to sort after the symlinks: in bsdtar 3.6.2 a preceding hard-link entry hides
        // its empty-linkname bug, which this fixture must be able to expose.
        try file("zz-hard-a", Array("shared inode\n".utf8))
        try check(link(path("zz-hard-a"), path("zz-hard-b")), "link zz-hard-b")
        try file("epoch.txt", Array("1970\n".utf8))
        if isRoot {
            try file("owned-big-ids.txt", Array("ids\n".utf8))
            try check(lchown(path("owned-big-ids.txt"), 3_000_000, 3_000_001), "lchown")
            try file("owned-small-ids.txt", Array("ids\n".utf8))
            try check(lchown(path("owned-small-ids.txt"), 1234, 5678), "lchown")
            try check(lchown(path("link-rel"), 42, 43), "lchown link")
        }

        // Nanosecond mtimes on everything, children before parents (writing a child changes
        // its directory's mtime), and exactly 0 on one file.
        let all = try walk(source, prefix: "src")
        for (index, entry) in all.reversed().enumerated() {
            let seconds = entry.localPath.hasSuffix("epoch.txt") ? 0 : 1_600_000_000 + index * 3_677
            let nanoseconds = entry.localPath.hasSuffix("epoch.txt") ? 0 : (index * 123_456_791 + 17) % 1_000_000_000
            var times = [timespec(tv_sec: seconds, tv_nsec: nanoseconds), timespec(tv_sec: seconds, tv_nsec: nanoseconds)]
            try check(utimensat(AT_FDCWD, entry.localPath, &times, AT_SYMLINK_NOFOLLOW), "utimensat \(entry.localPath)")
        }
    }
}

// MARK: - Walking a tree into headers (test code standing in for the real serializer)

struct WalkedEntry {
    var header: TarHeader
    var localPath: String
    var content: [UInt8]
}

/// Depth-first, names sorted by bytes, directory before its contents; later links to an inode
/// already seen become hard links to the first path.
func walk(_ directory: URL, prefix: String) throws -> [WalkedEntry] {
    var entries: [WalkedEntry] = []
    var seen: [String: String] = [:]

    func visit(_ localPath: String, _ archivePath: String) throws {
        var info = stat()
        guard lstat(localPath, &info) == 0 else { throw POSIXError(.ENOENT) }
        let mode = UInt32(info.st_mode) & 0o7777
        let mtime = TarTimestamp(seconds: Int64(info.st_mtim.tv_sec), nanoseconds: UInt32(info.st_mtim.tv_nsec))
        var header = TarHeader(
            path: archivePath, kind: .regular, mode: mode, uid: UInt64(info.st_uid), gid: UInt64(info.st_gid), mtime: mtime)
        var content: [UInt8] = []
        switch UInt32(info.st_mode) & UInt32(S_IFMT) {
        case UInt32(S_IFDIR):
            header.kind = .directory
            header.path = archivePath + "/"
        case UInt32(S_IFLNK):
            header.kind = .symbolicLink
            header.linkTarget = try FileManager.default.destinationOfSymbolicLink(atPath: localPath)
        case UInt32(S_IFREG):
            let identity = "\(info.st_dev):\(info.st_ino)"
            if info.st_nlink > 1, let first = seen[identity] {
                header.kind = .hardLink
                header.linkTarget = first
            } else {
                seen[identity] = archivePath
                content = Array(try Data(contentsOf: URL(fileURLWithPath: localPath)))
                header.size = UInt64(content.count)
            }
        default:
            return  // sockets and devices are not archived
        }
        entries.append(WalkedEntry(header: header, localPath: localPath, content: content))
        if header.kind == .directory {
            let names = try FileManager.default.contentsOfDirectory(atPath: localPath)
                .sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
            for name in names {
                try visit(localPath + "/" + name, archivePath + "/" + name)
            }
        }
    }
    try visit(directory.path, prefix)
    return entries
}

func writeArchive(_ entries: [WalkedEntry], to url: URL, global: [(key: String, value: String)]? = nil) throws {
    var bytes: [UInt8] = []
    if let global { bytes += try TarEncoder.encodeGlobalHeader(global) }
    for entry in entries {
        bytes += try TarEncoder.encode(entry.header)
        bytes += entry.content
        bytes += [UInt8](repeating: 0, count: TarEncoder.padding(forContentSize: entry.header.size))
    }
    bytes += TarEncoder.endOfArchive
    try Data(bytes).write(to: url)
}

// MARK: - Comparing trees

struct NodeSnapshot: Equatable, CustomStringConvertible {
    var type: UInt32
    var mode: UInt32?
    var content: [UInt8]?
    var linkTarget: String?
    var mtime: TarTimestamp?
    var owner: String?

    var description: String {
        "type \(String(type, radix: 8)) mode \(mode.map { String($0, radix: 8) } ?? "-") size \(content?.count ?? -1) link \(linkTarget ?? "-") mtime \(mtime.map { "\($0.seconds).\($0.nanoseconds)" } ?? "-") owner \(owner ?? "-")"
    }
}

/// Every node under `directory`, keyed by relative path. Symlink modes and times are not
/// compared: Linux symlinks are always 0777 and neither tool is asked to restore their times.
func snapshot(_ directory: URL, owners: Bool) throws -> (nodes: [String: NodeSnapshot], inodes: [String: UInt64]) {
    var nodes: [String: NodeSnapshot] = [:]
    var inodes: [String: UInt64] = [:]
    guard let enumerator = FileManager.default.enumerator(atPath: directory.path) else { return ([:], [:]) }
    for case let relative as String in enumerator {
        let full = directory.path + "/" + relative
        var info = stat()
        guard lstat(full, &info) == 0 else { continue }
        let type = UInt32(info.st_mode) & UInt32(S_IFMT)
        var node = NodeSnapshot(type: type)
        if type != UInt32(S_IFLNK) {
            node.mode = UInt32(info.st_mode) & 0o7777
            node.mtime = TarTimestamp(seconds: Int64(info.st_mtim.tv_sec), nanoseconds: UInt32(info.st_mtim.tv_nsec))
        } else {
            node.linkTarget = try FileManager.default.destinationOfSymbolicLink(atPath: full)
        }
        if type == UInt32(S_IFREG) {
            node.content = Array(try Data(contentsOf: URL(fileURLWithPath: full)))
        }
        if owners { node.owner = "\(info.st_uid):\(info.st_gid)" }
        nodes[relative] = node
        inodes[relative] = UInt64(info.st_ino)
    }
    return (nodes, inodes)
}

// MARK: - Tests

@Suite @MainActor struct TarInteropTests {
    static let global: [(key: String, value: String)] = [(key: "AMK.version", value: "1"), (key: "AMK.source", value: "com.example.app")]

    private func extractAndCompare(tool: String, arguments: (String, String) -> [String]) throws {
        let tree = try FixtureTree()
        let entries = try walk(tree.source, prefix: "src")
        let archiveURL = tree.root.appendingPathComponent("ours.tar")
        try writeArchive(entries, to: archiveURL, global: Self.global)

        let out = tree.root.appendingPathComponent("out-\(tool)")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        let result = try ChildProcess.run(tool, arguments(archiveURL.path, out.path))
        #expect(result.status == 0, "\(tool) failed: \(result.stderr)")
        #expect(result.stderr.isEmpty, "\(tool) stderr: \(result.stderr)")

        let expected = try snapshot(tree.source, owners: tree.isRoot)
        let actual = try snapshot(out.appendingPathComponent("src"), owners: tree.isRoot)
        #expect(expected.nodes.count == entries.count - 1)
        #expect(Set(actual.nodes.keys) == Set(expected.nodes.keys))
        for (path, node) in expected.nodes.sorted(by: { $0.key < $1.key }) {
            #expect(
                actual.nodes[path] == node,
                "\(tool): \(path)\n expected \(node)\n actual   \(actual.nodes[path].map(\.description) ?? "missing")")
        }
        #expect(
            actual.inodes["zz-hard-a"] != nil && actual.inodes["zz-hard-a"] == actual.inodes["zz-hard-b"],
            "\(tool): hard link does not share the inode")
        // Make sure the fixture really covers what it claims.
        #expect(expected.nodes["epoch.txt"]?.mtime == TarTimestamp(seconds: 0))
        #expect(expected.nodes["setuid-tool"]?.mode == 0o4755 && expected.nodes["sticky"]?.mode == 0o1777)
        #expect(entries.contains { $0.header.path.utf8.count > 255 })
        #expect(entries.contains { ($0.header.linkTarget?.utf8.count ?? 0) > 100 })
    }

    @Test(.enabled(if: ChildProcess.lookUp("tar") != nil, "GNU tar is not installed"))
    func gnuTarExtractsOurArchiveIdentically() throws {
        try extractAndCompare(tool: "tar") { archive, out in ["-xpf", archive, "-C", out] }
    }

    @Test(.enabled(if: ChildProcess.lookUp("bsdtar") != nil, "bsdtar (libarchive-tools) is not installed"))
    func bsdtarExtractsOurArchiveIdentically() throws {
        try extractAndCompare(tool: "bsdtar") { archive, out in ["-xpf", archive, "-C", out] }
    }

    @Test(.enabled(if: ChildProcess.lookUp("python3") != nil, "python3 is not installed"))
    func pythonTarfileOpensOurArchive() throws {
        let tree = try FixtureTree()
        let entries = try walk(tree.source, prefix: "src")
        let archiveURL = tree.root.appendingPathComponent("ours.tar")
        try writeArchive(entries, to: archiveURL, global: Self.global)
        let script = "import tarfile,sys; print(len(tarfile.open(sys.argv[1]).getmembers()))"
        let result = try ChildProcess.run("python3", ["-c", script, archiveURL.path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdoutString.trimmingCharacters(in: .whitespacesAndNewlines) == String(entries.count))
        let names = try ChildProcess.run(
            "python3", ["-c", "import tarfile,sys; [print(m.name) for m in tarfile.open(sys.argv[1])]", archiveURL.path])
        // Python strips the trailing slash of directories.
        #expect(
            names.stdoutString.split(separator: "\n").map(String.init)
                == entries.map { $0.header.path.hasSuffix("/") ? String($0.header.path.dropLast()) : $0.header.path })
    }

    @Test(.enabled(if: ChildProcess.lookUp("tar") != nil, "GNU tar is not installed"), arguments: ["pax", "gnu"])
    func gnuTarArchivesParseToTheSameMembers(format: String) throws {
        let tree = try FixtureTree()
        let entries = try walk(tree.source, prefix: "src")
        let archiveURL = tree.root.appendingPathComponent("gnu-\(format).tar")
        let result = try ChildProcess.run("tar", ["--format=\(format)", "--sort=name", "-cf", archiveURL.path, "-C", tree.root.path, "src"])
        #expect(result.status == 0 && result.stderr.isEmpty, "\(result.stderr)")

        let bytes = Array(try Data(contentsOf: archiveURL))
        let events = try parse(bytes, sliceSize: { rng in Int.random(in: 1...70_000, using: &rng) })
        let parsed = members(events)
        #expect(parsed.map(\.header.path) == entries.map(\.header.path))
        let byPath = Dictionary(parsed.map { ($0.header.path, $0.header) }, uniquingKeysWith: { first, _ in first })
        let bodies = contents(events)
        for entry in entries {
            let expected = entry.header
            guard let actual = byPath[expected.path] else {
                Issue.record("\(format): \(expected.path) missing")
                continue
            }
            #expect(actual.kind == expected.kind, "\(format): \(expected.path)")
            #expect(actual.size == expected.size, "\(format): \(expected.path)")
            #expect(actual.linkTarget == expected.linkTarget, "\(format): \(expected.path)")
            #expect(actual.mode == expected.mode, "\(format): \(expected.path)")
            #expect(actual.uid == expected.uid && actual.gid == expected.gid, "\(format): \(expected.path)")
            // The gnu format only has whole seconds; pax carries the nanoseconds.
            let mtime = format == "pax" ? expected.mtime : TarTimestamp(seconds: expected.mtime.seconds)
            #expect(actual.mtime == mtime, "\(format): \(expected.path)")
            #expect(bodies[expected.path] == entry.content, "\(format): content of \(expected.path)")
        }
        #expect(parsed.contains { $0.hasPaxHeader } == (format == "pax"))
    }
}

// MARK: - A member above 8 GiB, streamed

/// header(big.bin, 8 GiB + 12345) + content + padding + header(after.txt) + "after\n" +
/// padding + end marker, produced in pieces without ever materialising the content: every
/// content piece is the same 1 MiB pattern buffer.
struct BigStream {
    static let size: UInt64 = (8 << 30) + 12_345
    static let piece = 1 << 20
    let header: [UInt8]
    let tail: [UInt8]
    let pattern: [UInt8]

    init() throws {
        header = try TarEncoder.encode(
            TarHeader(path: "big.bin", kind: .regular, size: Self.size, uid: 1000, gid: 1000, mtime: .init(seconds: 1_700_000_000)))
        let after = Array("after\n".utf8)
        tail =
            [UInt8](repeating: 0, count: TarEncoder.padding(forContentSize: Self.size))
            + (try TarEncoder.encode(
                TarHeader(
                    path: "after.txt", kind: .regular, size: UInt64(after.count), uid: 1000, gid: 1000, mtime: .init(seconds: 1_700_000_000)
                )))
            + after + [UInt8](repeating: 0, count: TarEncoder.padding(forContentSize: UInt64(after.count)))
            + TarEncoder.endOfArchive
        pattern = (0..<Self.piece).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 11) }
    }

    func forEachChunk(_ body: (UnsafeRawBufferPointer) throws -> Void) rethrows {
        try header.withUnsafeBytes(body)
        try pattern.withUnsafeBytes { pattern in
            var remaining = Self.size
            while remaining > 0 {
                let take = Int(min(remaining, UInt64(Self.piece)))
                try body(UnsafeRawBufferPointer(rebasing: pattern[0..<take]))
                remaining -= UInt64(take)
            }
        }
        try tail.withUnsafeBytes(body)
    }
}

@Suite @MainActor struct TarLargeMemberTests {
    @Test func parserReportsMemberAbove8GiBAndTheFollowingMember() throws {
        let stream = try BigStream()
        #expect(stream.header.count == 1536, "a pax x header (512 + 512) with a size record, then the ustar block")
        var parser = TarParser()
        var found: [TarMember] = []
        var dataBytes: UInt64 = 0
        var mismatches = 0
        var afterContent: [UInt8] = []
        var endOffset: UInt64?
        try stream.pattern.withUnsafeBytes { pattern in
            try stream.forEachChunk { chunk in
                try parser.consume(chunk) { event in
                    switch event {
                    case .member(let member):
                        found.append(member)
                    case .data(let data, let offset):
                        if found.count == 1 {
                            #expect(offset == found[0].dataOffset + dataBytes)
                            // Compare with the pattern at the same content position.
                            var done = 0
                            while done < data.count {
                                let position = Int((dataBytes + UInt64(done)) % UInt64(BigStream.piece))
                                let length = min(data.count - done, BigStream.piece - position)
                                if memcmp(data.baseAddress! + done, pattern.baseAddress! + position, length) != 0 { mismatches += 1 }
                                done += length
                            }
                            dataBytes += UInt64(data.count)
                        } else {
                            afterContent += data
                        }
                    case .end(let offset):
                        endOffset = offset
                    default:
                        break
                    }
                }
            }
        }
        try parser.finish()
        #expect(found.count == 2)
        #expect(found.first?.header.size == 8_589_946_937)
        #expect(found.first?.dataOffset == 1536)
        #expect(dataBytes == 8_589_946_937)
        #expect(mismatches == 0)
        let afterOffset: UInt64 = 1536 + 8_589_946_937 + 455
        #expect(found.last?.header.path == "after.txt")
        #expect(found.last?.headerOffset == afterOffset)
        #expect(afterContent == Array("after\n".utf8))
        #expect(endOffset == afterOffset + 1024)
    }

    @Test(.enabled(if: ChildProcess.lookUp("tar") != nil, "GNU tar is not installed"))
    func gnuTarListsMemberAbove8GiBFromAPipe() throws {
        let stream = try BigStream()
        // If tar dies early, writes must fail with EPIPE instead of killing the test process.
        signal(SIGPIPE, SIG_IGN)
        // These 8 GiB stream through a pipe as they are generated, never touching the disk.
        let ends = try pipeClosedOnExec()
        let tar = try ChildProcess.start("tar", ["-tvf", "-"], stdinDescriptor: ends[0])
        close(ends[0])

        let fd = ends[1]
        var writeFailed = false
        stream.forEachChunk { chunk in
            var done = 0
            while done < chunk.count, !writeFailed {
                let written = write(fd, chunk.baseAddress! + done, chunk.count - done)
                if written < 0 {
                    if errno == EINTR { continue }
                    writeFailed = true
                } else {
                    done += written
                }
            }
        }
        close(fd)
        let result = try tar.waitUntilExit()

        let stdout = result.stdoutString
        let stderr = result.stderr
        #expect(!writeFailed)
        #expect(result.status == 0, "\(stderr)")
        #expect(stderr.isEmpty, "\(stderr)")
        let lines = stdout.split(separator: "\n")
        #expect(lines.count == 2, "\(stdout)")
        #expect(lines.first?.contains(" 8589946937 ") == true && lines.first?.hasSuffix(" big.bin") == true, "\(stdout)")
        #expect(lines.last?.contains(" 6 ") == true && lines.last?.hasSuffix(" after.txt") == true, "\(stdout)")
        #expect(lines.allSatisfy { $0.hasPrefix("-rw-r--r-- 1000/1000 ") }, "\(stdout)")
    }
}
