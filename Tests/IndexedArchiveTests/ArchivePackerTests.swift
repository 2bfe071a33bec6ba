import Foundation
import IndexedArchive
import Testing

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
        let summary = try await ArchivePacker.pack([PackSource(path: root, archivePath: "src")], to: .file(archive),
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
        let original = try TreeSnapshot(root)
        let extracted = try TreeSnapshot(out + "/src")
        #expect(original.items.keys.sorted() == extracted.items.keys.sorted())
        for (key, item) in original.items {
            #expect(extracted.items[key] == item, "\(key) differs")
        }
        var a = stat(), b = stat()
        lstat(out + "/src/docs/notes.txt", &a)
        lstat(out + "/src/hardlink-to-notes", &b)
        #expect(a.st_ino == b.st_ino, "the hard link shares the inode")
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

    @Test func aReaderThatGoesAwayIsAnErrorNotADeadProcess() async throws {
        let dir = try TemporaryDirectory()
        let root = try Self.makeTree(in: dir)
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        close(fds[0])
        defer { close(fds[1]) }
        // Without care, SIGPIPE would kill the test process here.
        let error = await #expect(throws: ArchiveError.self) {
            try await ArchivePacker.pack([PackSource(path: root, archivePath: "src")], to: .fileDescriptor(fds[1]),
                                         options: Self.options())
        }
        #expect(error?.code == .io(errno: EPIPE))
    }
}
