import ArchiveTestSupport
import Foundation
import IndexedArchive
import Tar
import TestSupport
import Testing
import XZ

/// The suites of this target that pack, extract and run tools, nested so that their tests run one
/// at a time. Run side by side, dozens of packs (each with its compressor and I/O threads) and tool
/// processes oversubscribe a 2-core machine so much that time-sensitive tests of the same process
/// (cancellation latency here, the watchdog's elsewhere) miss their deadlines by seconds; one at a
/// time, the whole set takes about as long, since the CPU is the limit either way.
@Suite(.serialized) enum EngineSuites {}

/// ArchiveStreamReaderTests uses the packer tests' tree and options by this name.
typealias ArchivePackerTests = EngineSuites.ArchivePackerTests

/// Helpers to fill a test's directory.
extension TemporaryDirectory {
    func file(_ relative: String, _ bytes: [UInt8], mode: Int = 0o644) throws {
        try createFile(path + "/" + relative, bytes, mode: mode)
    }

    func file(_ relative: String, _ text: String, mode: Int = 0o644) throws {
        try file(relative, Array(text.utf8), mode: mode)
    }
}

/// Creates a file (and its missing parent directories) with `bytes` and `mode`.
func createFile(_ full: String, _ bytes: [UInt8], mode: Int = 0o644) throws {
    try FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    guard FileManager.default.createFile(atPath: full, contents: Data(bytes)) else { throw CocoaError(.fileWriteUnknown) }
    chmod(full, mode_t(mode))
}

/// Deterministic bytes: text-like when `text`, else noise that does not compress.
func sampleBytes(count: Int, seed: UInt64, text: Bool) -> [UInt8] {
    var generator = SeededGenerator(seed: seed &+ 0x9E37_79B9_7F4A_7C15)
    func next() -> UInt64 { generator.next() }
    var out: [UInt8] = []
    out.reserveCapacity(count)
    if text {
        let words: [[UInt8]] = [
            "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
            "{\"id\":", "\"name\":", "true", "false", "null", "0.5", "1024", "\n", ", ", "<key>", "</key>"
        ]
        .map { Array($0.utf8) + [32] }
        while out.count < count {
            out.append(contentsOf: words[Int(next() % UInt64(words.count))])
        }
        out.removeLast(out.count - count)
    } else {
        while out.count < count {
            withUnsafeBytes(of: next()) { out.append(contentsOf: $0) }
        }
        out.removeLast(out.count - count)
    }
    return out
}

/// What a tree holds, for comparing an extracted tree with its source.
struct TreeSnapshot: Equatable, CustomStringConvertible {
    struct Item: Equatable {
        var type: String
        var mode: UInt32
        var size: Int
        var content: [UInt8]
        var link: String?
        var mtimeSeconds: Int
        var mtimeNanoseconds: Int
    }

    var items: [String: Item]

    init(_ root: String, timesOfDirectories: Bool = true) throws {
        items = [:]
        guard exists(root), let enumerator = FileManager.default.enumerator(atPath: root) else { return }
        while let relative = enumerator.nextObject() as? String {
            let full = root + "/" + relative
            var info = stat()
            guard lstat(full, &info) == 0 else { continue }
            var item = Item(
                type: "?", mode: UInt32(info.st_mode) & 0o7777, size: 0, content: [], link: nil,
                mtimeSeconds: info.st_mtim.tv_sec, mtimeNanoseconds: info.st_mtim.tv_nsec)
            switch info.st_mode & S_IFMT {
            case S_IFREG:
                item.type = "file"
                item.size = Int(info.st_size)
                item.content = Array(FileManager.default.contents(atPath: full) ?? Data())
            case S_IFDIR:
                item.type = "dir"
                if !timesOfDirectories {
                    item.mtimeSeconds = 0
                    item.mtimeNanoseconds = 0
                }
            case S_IFLNK:
                item.type = "link"
                item.link = try FileManager.default.destinationOfSymbolicLink(atPath: full)
                item.mode = 0
                item.mtimeSeconds = 0
                item.mtimeNanoseconds = 0
            default:
                item.type = "other"
            }
            items[relative] = item
        }
    }

    var description: String { items.keys.sorted().joined(separator: "\n") }

    /// The snapshot, taken off the cooperative pool.
    static func of(_ root: String) async throws -> TreeSnapshot {
        try await offPool { try TreeSnapshot(root) }
    }
}

/// What every tool of these tests runs with, on top of the test process's environment: the C
/// locale, and the system's tools only (not whatever else is on the `PATH`, such as a Python
/// version manager's shims).
let toolEnvironment = ["LC_ALL": "C.UTF-8", "PATH": "/usr/bin:/bin"]

/// Runs a tool (`arguments[0]`, found on ``toolEnvironment``'s `PATH`) to completion, waiting
/// without holding a thread of Swift's cooperative pool (on a 2-core machine the pool has two).
@discardableResult
func runTool(_ arguments: [String], stdin: [UInt8]? = nil, in directory: String? = nil) async throws -> ChildProcess.Result {
    try await ChildProcess.run(
        arguments[0], Array(arguments.dropFirst()), stdin: stdin, in: directory.map { URL(filePath: $0, directoryHint: .isDirectory) },
        environment: toolEnvironment)
}

/// Runs a bash script (pipelines, redirections) with the same environment as ``runTool``.
@discardableResult
func runShell(_ script: String, in directory: String? = nil) async throws -> ChildProcess.Result {
    try await runTool(["bash", "-c", "set -u; " + script], in: directory)
}

/// Whether ``runTool`` finds the tool `name`.
func toolExists(_ name: String) -> Bool {
    ChildProcess.lookUp(name, searchPath: toolEnvironment["PATH"]) != nil
}

/// Whether the tests run as root (they usually do, in the container).
let runningAsRoot = geteuid() == 0

// MARK: - Files

func readBytes(_ path: String) async throws -> [UInt8] {
    try await offPool { Array(try Data(contentsOf: URL(fileURLWithPath: path))) }
}

func writeBytes(_ path: String, _ bytes: some Collection<UInt8>) async throws {
    let data = Data(bytes)
    try await offPool { try data.write(to: URL(fileURLWithPath: path)) }
}

func exists(_ path: String) -> Bool {
    var info = stat()
    return lstat(path, &info) == 0
}

/// Names in a directory, sorted (empty if it does not exist).
func listing(_ path: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
}

/// Every regular file under `root` (relative paths) whose bytes differ from the same path under
/// `source`, or that has no counterpart there. Empty when every file present is whole and right.
func filesThatDifferFromSource(_ root: String, source: String) async throws -> [String] {
    try await offPool { try filesThatDifferFromSourceBlocking(root, source: source) }
}

private func filesThatDifferFromSourceBlocking(_ root: String, source: String) throws -> [String] {
    let snapshot = try TreeSnapshot(root)
    var wrong: [String] = []
    for (path, item) in snapshot.items where item.type == "file" {
        let original = FileManager.default.contents(atPath: source + "/" + path).map(Array.init)
        if original != item.content { wrong.append(path) }
    }
    return wrong.sorted()
}

/// Compares two snapshots item by item and records one issue per difference.
func expectSameTree(
    _ expected: TreeSnapshot, _ actual: TreeSnapshot, _ what: String,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(expected.items.keys.sorted() == actual.items.keys.sorted(), "\(what): different paths", sourceLocation: sourceLocation)
    for (key, item) in expected.items.sorted(by: { $0.key < $1.key }) {
        guard let other = actual.items[key] else { continue }
        if other != item {
            Issue.record("\(what): '\(key)' differs: expected \(item.brief), got \(other.brief)", sourceLocation: sourceLocation)
        }
    }
}

extension TreeSnapshot.Item {
    var brief: String {
        "\(type) mode \(String(mode, radix: 8)) size \(size) link \(link ?? "-") mtime \(mtimeSeconds).\(mtimeNanoseconds)"
    }
}

// MARK: - Shared sample data

/// Sample bytes generated once per test process (generating them is slow in a debug build).
enum Samples {
    static let text2Point5M = sampleBytes(count: 2_500_000, seed: 3, text: true)
    static let noise1Point2M = sampleBytes(count: 1_200_000, seed: 4, text: false)
    static let text40K = sampleBytes(count: 40_000, seed: 2, text: true)
    static let noise512 = sampleBytes(count: 512, seed: 1, text: false)
}

// MARK: - The compatibility tree

/// The tree of format-study §4: every kind and corner the format must carry through stock tools.
enum CompatTree {
    static let segment = String(repeating: "long-component-", count: 6)  // 90 bytes
    static let over100 = String(repeating: "m", count: 60) + "/" + String(repeating: "m", count: 60) + ".txt"
    static let over255 = "\(segment)/\(segment)/\(segment)/file.txt"
    static let component200 = String(repeating: "c", count: 196) + ".txt"
    static let danglingTarget = "/nonexistent/" + String(repeating: "x", count: 150)
    static let bigUID: uid_t = 3_000_000
    static let bigGID: gid_t = 3_000_001

    /// Builds the tree at `dir/name` and returns its path. About 3.8 MB, so an archive with 1 MiB
    /// chunks has four data blocks.
    @discardableResult
    static func make(in dir: TemporaryDirectory, name: String = "src") async throws -> String {
        try await offPool { try makeBlocking(in: dir, name: name) }
    }

    private static func makeBlocking(in dir: TemporaryDirectory, name: String) throws -> String {
        let root = dir.path + "/" + name
        try dir.file("\(name)/empty.txt", [])
        try dir.file("\(name)/exact512.bin", Samples.noise512)
        try dir.file("\(name)/docs/notes.txt", Samples.text40K)
        try dir.file("\(name)/docs/big.json", Samples.text2Point5M)
        try dir.file("\(name)/media/noise.bin", Samples.noise1Point2M)
        try dir.file("\(name)/private.key", "secret\n", mode: 0o600)
        try dir.file("\(name)/run.sh", "#!/bin/sh\necho hi\n", mode: 0o755)
        try dir.file("\(name)/setuid-tool", "#!/bin/sh\n", mode: 0o4755)
        try dir.file("\(name)/ünïcödé-名前.txt", "unicode\n")
        try dir.file("\(name)/emoji-🎉/ß.txt", "emoji dir\n")
        try dir.file("\(name)/\(over100)", "over 100 bytes")
        try dir.file("\(name)/\(over255)", "over 255 bytes")
        try dir.file("\(name)/\(component200)", "a 200-byte component")
        try dir.file("\(name)/epoch.txt", "mtime 0")
        try dir.file("\(name)/owned.txt", "owned by a large uid")
        if runningAsRoot { chown(root + "/owned.txt", bigUID, bigGID) }
        symlink("docs/notes.txt", root + "/link-to-notes")
        symlink(over255, root + "/long-link")
        symlink(danglingTarget, root + "/dangling")
        symlink("ünïcödé-名前.txt", root + "/utf8-link")
        link(root + "/docs/notes.txt", root + "/hardlink-to-notes")
        link(root + "/" + over255, root + "/zz-hardlink-to-long-path")  // sorts after its target: a pax linkpath on a typeflag 1

        mkdir(root + "/sticky", 0o1777)
        chmod(root + "/sticky", 0o1777)
        mkdir(root + "/private-dir", 0o750)
        chmod(root + "/private-dir", 0o750)
        try dir.file("\(name)/private-dir/inside.txt", "inside")
        mkdir(root + "/empty-dir", 0o755)
        setTimes(root)
        return root
    }

    /// Gives every entry a distinct mtime with nanoseconds (`epoch.txt` gets 0), deepest first
    /// so that no directory's time is disturbed afterwards.
    static func setTimes(_ root: String) {
        var paths = (FileManager.default.enumerator(atPath: root)?.allObjects as? [String]) ?? []
        paths.sort { $0.count > $1.count }
        for (i, relative) in paths.enumerated() {
            let seconds = relative == "epoch.txt" ? 0 : 1_600_000_000 + i * 3_607
            let nanos = relative == "epoch.txt" ? 0 : (i * 7_919 + 123_457) % 1_000_000_000
            var times = [timespec(tv_sec: seconds, tv_nsec: nanos), timespec(tv_sec: seconds, tv_nsec: nanos)]
            utimensat(AT_FDCWD, root + "/" + relative, &times, AT_SYMLINK_NOFOLLOW)
        }
    }
}

extension TreeSnapshot {
    /// The same tree as an extraction that does not restore ownership writes it: files lose their
    /// set-user-ID and set-group-ID bits.
    func droppingSetIDBits() -> TreeSnapshot {
        var copy = self
        for key in copy.items.keys where copy.items[key]!.type == "file" { copy.items[key]!.mode &= ~0o6000 }
        return copy
    }

    /// The same tree with sub-second times dropped, as formats without them (GNU tar's default) restore it.
    func truncatingNanoseconds() -> TreeSnapshot {
        var copy = self
        for key in copy.items.keys { copy.items[key]!.mtimeNanoseconds = 0 }
        return copy
    }
}

// MARK: - xz --robot -lvv

/// One block as `xz --robot -lvv` describes it: an independent view of an archive's layout.
struct ToolBlock {
    var compressedOffset: UInt64
    var uncompressedOffset: UInt64
    var totalSize: UInt64
    var uncompressedSize: UInt64
    var check: String
    var flags: String
    /// The filter chain, as `xz` writes it (`--lzma2=dict=6MiB`).
    var filters: String
}

/// The blocks of an .xz file according to the `xz` tool.
func xzToolBlocks(_ path: String) async throws -> [ToolBlock] {
    let result = try await runTool(["xz", "--robot", "-lvv", path])
    guard result.status == 0 else { throw CocoaError(.fileReadCorruptFile) }
    return result.stdoutString.split(separator: "\n").compactMap { line in
        let f = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        guard f.first == "block", f.count >= 13 else { return nil }
        return ToolBlock(
            compressedOffset: UInt64(f[4])!, uncompressedOffset: UInt64(f[5])!, totalSize: UInt64(f[6])!,
            uncompressedSize: UInt64(f[7])!, check: f[9], flags: f[12], filters: f.count > 15 ? f[15] : "")
    }
}

// MARK: - Packing

/// Fast settings for tests: 1 MiB chunks, preset 0, two workers.
func testOptions(preset: Int = 0, chunk: Int = 1 << 20, metadata: [String: String] = [:]) -> PackOptions {
    var options = PackOptions()
    options.preset = preset
    options.chunkSize = chunk
    options.workers = 2
    options.metadata = metadata
    return options
}

/// A packed compatibility tree: the directory that holds it, the source root, the archive.
struct PackedTree {
    let dir: TemporaryDirectory
    let root: String
    let archive: String
    let summary: PackSummary

    /// The compatibility tree packed as `src` into `dir/A.tar.xz`.
    static func make(options: PackOptions = testOptions(metadata: ["resourcesVersion": "7"])) async throws -> PackedTree {
        let dir = try TemporaryDirectory()
        let root = try await CompatTree.make(in: dir)
        let archive = dir.path + "/A.tar.xz"
        let summary = try await ArchivePacker.pack([PackSource(path: root, archivePath: "src")], to: .file(archive), options: options)
        return PackedTree(dir: dir, root: root, archive: archive, summary: summary)
    }
}

// MARK: - Hand-made archives

/// A tar stream of `members` (header, content), with the end marker unless `end` is false. The
/// Tar module's encoder writes whatever path it is given, `..` and absolute ones included.
func tarStream(_ members: [(TarHeader, [UInt8])], end: Bool = true) throws -> [UInt8] {
    var out: [UInt8] = []
    for (header, content) in members {
        out += try TarEncoder.encode(header)
        out += content
        out += [UInt8](repeating: 0, count: TarEncoder.padding(forContentSize: UInt64(content.count)))
    }
    if end { out += TarEncoder.endOfArchive }
    return out
}

func tarFile(_ path: String, _ text: String, mode: UInt32 = 0o644) -> (TarHeader, [UInt8]) {
    (
        TarHeader(
            path: path, kind: .regular, size: UInt64(text.utf8.count), mode: mode,
            mtime: TarTimestamp(seconds: 1_700_000_000)), Array(text.utf8)
    )
}

func tarDirectory(_ path: String) -> (TarHeader, [UInt8]) {
    (TarHeader(path: path, kind: .directory, mode: 0o755, mtime: TarTimestamp(seconds: 1_700_000_000)), [])
}

func tarSymlink(_ path: String, to target: String) -> (TarHeader, [UInt8]) {
    (TarHeader(path: path, kind: .symbolicLink, mode: 0o777, linkTarget: target), [])
}

func tarHardLink(_ path: String, to target: String) -> (TarHeader, [UInt8]) {
    (TarHeader(path: path, kind: .hardLink, mode: 0o644, linkTarget: target), [])
}

/// `bytes` compressed by the `xz` tool: a foreign, single-block archive our reader reads sequentially.
func xzTool(_ bytes: [UInt8]) async throws -> [UInt8] {
    let result = try await runTool(["xz", "-c", "-0", "--check=crc64"], stdin: bytes)
    guard result.status == 0 else { throw CocoaError(.fileWriteUnknown) }
    return result.stdout
}

/// The index entries of a tar stream, as our writer would record them.
func indexEntries(of tar: [UInt8]) throws -> [ArchiveEntry] {
    try Craft.indexEntries(of: tar)
}

/// An archive in our indexed layout, assembled with the XZ module from any tar stream (hostile
/// ones included): data blocks of `chunk` bytes, the rich index (`index`, or one describing the
/// tar, possibly tampered by `tamper`), the pixz index, the xz Index and the footer.
///
/// `describing` is the tar the index is computed from, when it is not `tar` itself: a twin of the
/// same layout that the parser accepts, for a `tar` whose hostile names it would refuse.
func indexedArchive(
    tar: [UInt8], describing: [UInt8]? = nil, chunk: Int = 1 << 20, index: [UInt8]? = nil,
    tamper: (inout ArchiveIndex) -> Void = { _ in }
) throws -> [UInt8] {
    let encoder = try BlockEncoder(preset: 0, maxChunkSize: chunk)
    var out = StreamHeader.encode(check: .crc64)
    var xzIndex = XZIndexBuilder()
    func add(_ payload: [UInt8]) throws {
        let block = try payload.withUnsafeBytes { try encoder.encode($0) }
        out += block.bytes
        try xzIndex.append(unpaddedSize: block.unpaddedSize, uncompressedSize: block.uncompressedSize)
    }
    var start = 0
    while start < tar.count {
        try add(Array(tar[start..<min(tar.count, start + chunk)]))
        start += chunk
    }
    let entries = try indexEntries(of: describing ?? tar)
    var rich = ArchiveIndex(entries: entries, tarSize: UInt64(tar.count), chunkSize: UInt64(chunk), metadata: ["writer": "tests"])
    tamper(&rich)
    try add(index ?? rich.encoded())
    var pixz: [UInt8] = [0xa6, 0x4c, 0x32, 0x2e, 0xd6, 0x14, 0xae, 0xdb]
    for entry in entries {
        pixz += Array(entry.path.utf8) + [0]
        withUnsafeBytes(of: entry.headerOffset.littleEndian) { pixz += $0 }
    }
    pixz += [0]
    withUnsafeBytes(of: UInt64(tar.count).littleEndian) { pixz += $0 }
    try add(pixz)
    let encodedIndex = xzIndex.encoded()
    out += encodedIndex
    out += StreamFooter.encode(check: .crc64, indexSize: UInt64(encodedIndex.count))
    return out
}

/// How a hostile archive is presented to the reader.
enum ReadMode: String, CaseIterable, Sendable {
    /// Compressed by `xz`: no index, read from the start.
    case sequential
    /// In our layout with an index that agrees with the tar stream.
    case indexed
}

/// Writes `tar` as an archive read in `mode` and opens it.
func hostileArchive(_ tar: [UInt8], mode: ReadMode, at path: String) async throws -> ArchiveReader {
    switch mode {
    case .sequential: try await writeBytes(path, try await xzTool(tar))
    case .indexed: try await writeBytes(path, try indexedArchive(tar: tar))
    }
    let reader = try ArchiveReader(path: path)
    guard reader.mode == (mode == .indexed ? .indexed : .sequential) else { throw CocoaError(.fileReadCorruptFile) }
    return reader
}

/// Runs `body` and returns the ArchiveError it throws; records an issue if it does not throw or
/// throws something else.
@discardableResult
func expectArchiveError<T>(
    _ what: String, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> T
) async -> ArchiveError? {
    do {
        _ = try await body()
        Issue.record("\(what): expected an ArchiveError, nothing was thrown", sourceLocation: sourceLocation)
    } catch let error as ArchiveError {
        return error
    } catch {
        Issue.record("\(what): expected an ArchiveError, got \(type(of: error)): \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

/// A tree deeper than `PATH_MAX`, made with descriptors (no path to it fits in one call): `levels`
/// folders of 200 `d`s under `root`, with `deep.txt` ("deep"), `link` (to `deep.txt`) and
/// `sub/` at the bottom. Returns the path of the bottom folder.
func makeTreeDeeperThanPathMax(under root: String, levels: Int = 25) throws -> String {
    let name = String(repeating: "d", count: 200)
    var folder = open(root, O_RDONLY | O_DIRECTORY)
    guard folder >= 0 else { throw CocoaError(.fileNoSuchFile) }
    defer { close(folder) }
    var path = root
    for _ in 0..<levels {
        guard mkdirat(folder, name, 0o755) == 0 else { throw CocoaError(.fileWriteUnknown) }
        let next = openat(folder, name, O_RDONLY | O_DIRECTORY)
        guard next >= 0 else { throw CocoaError(.fileNoSuchFile) }
        close(folder)
        folder = next
        path += "/" + name
    }
    let file = openat(folder, "deep.txt", O_WRONLY | O_CREAT | O_EXCL, 0o640)
    guard file >= 0 else { throw CocoaError(.fileWriteUnknown) }
    defer { close(file) }
    guard write(file, "deep", 4) == 4, symlinkat("deep.txt", folder, "link") == 0, mkdirat(folder, "sub", 0o700) == 0 else {
        throw CocoaError(.fileWriteUnknown)
    }
    return path
}

/// Packs `big/zeros.bin`, 768 MiB of zeros, into `Z.tar.xz` in `dir` and returns the archive's
/// path. The file is sparse: quick to pack and small to store, but long enough to write out that a
/// cancellation lands inside the member.
func packLongZeros(in dir: TemporaryDirectory) async throws -> String {
    let source = dir.path + "/big"
    try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
    let fd = open(source + "/zeros.bin", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    try #require(fd >= 0)
    defer { close(fd) }
    try #require(ftruncate(fd, 768 << 20) == 0)
    let archive = dir.path + "/Z.tar.xz"
    _ = try await ArchivePacker.pack(
        [PackSource(path: source, archivePath: "big")], to: .file(archive), options: testOptions(chunk: 8 << 20))
    return archive
}
