import Foundation
import IndexedArchive
import Testing

@Suite struct ArchiveStreamReaderTests {
    /// Packs `root` into one end of a pipe while the stream reader extracts from the other.
    @Test func packThroughAPipeArrivesIdentical() async throws {
        let dir = try TemporaryDirectory()
        let root = try ArchivePackerTests.makeTree(in: dir)
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let (readEnd, writeEnd) = (fds[0], fds[1])
        defer { close(readEnd) }
        let out = dir.path + "/out"
        async let received = ArchiveStreamReader.extract(from: readEnd, to: out)
        let summary: PackSummary
        do {
            defer { close(writeEnd) }
            summary = try await ArchivePacker.pack([PackSource(path: root, archivePath: "src")], to: .fileDescriptor(writeEnd),
                                                   options: ArchivePackerTests.options())
        }
        let result = try await received
        #expect(result.indexVerified)
        #expect(result.entries.count == summary.entries)
        #expect(result.metadata["resourcesVersion"] == "3")
        let original = try TreeSnapshot(root)
        let extracted = try TreeSnapshot(out + "/src")
        #expect(original == extracted)
    }

    static func packToBytes(_ root: String, in dir: TemporaryDirectory) async throws -> [UInt8] {
        let archive = dir.path + "/stream.tar.xz"
        try await ArchivePacker.pack([PackSource(path: root, archivePath: "src")], to: .file(archive),
                                     options: ArchivePackerTests.options())
        return Array(try Data(contentsOf: URL(fileURLWithPath: archive)))
    }

    /// Feeds `bytes` through a pipe from a thread of its own, then closes it.
    static func extract(_ bytes: [UInt8], to out: String) async throws -> ArchiveStreamReader.Result {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw CocoaError(.fileWriteUnknown) }
        let (readEnd, writeEnd) = (fds[0], fds[1])
        defer { close(readEnd) }
        let writer = Thread {
            var blocked = sigset_t()
            sigemptyset(&blocked)
            sigaddset(&blocked, SIGPIPE)
            pthread_sigmask(SIG_BLOCK, &blocked, nil)
            bytes.withUnsafeBytes { raw in
                var offset = 0
                while offset < raw.count {
                    let n = write(writeEnd, raw.baseAddress! + offset, raw.count - offset)
                    if n <= 0 { break }
                    offset += n
                }
            }
            close(writeEnd)
        }
        writer.start()
        return try await ArchiveStreamReader.extract(from: readEnd, to: out)
    }

    @Test func aStreamCutShortFailsAndLeavesNoHalfFile() async throws {
        let dir = try TemporaryDirectory()
        let root = try ArchivePackerTests.makeTree(in: dir)
        let bytes = try await Self.packToBytes(root, in: dir)
        for cut in [bytes.count / 3, bytes.count / 2, bytes.count - 1] {
            let out = dir.path + "/cut-\(cut)"
            let error = await #expect(throws: ArchiveError.self) {
                try await Self.extract(Array(bytes[..<cut]), to: out)
            }
            #expect(error?.code == .corrupt, "cut at \(cut): \(String(describing: error))")
            // Whatever was written is whole: each file present equals its source.
            let got = try TreeSnapshot(out)
            let original = try TreeSnapshot(root)
            for (path, item) in got.items where item.type == "file" {
                let relative = String(path.dropFirst("src/".count))
                #expect(original.items[relative]?.content == item.content, "cut at \(cut): \(path) is partial")
            }
        }
    }

    @Test func aFlippedByteIsCaught() async throws {
        let dir = try TemporaryDirectory()
        let root = try ArchivePackerTests.makeTree(in: dir)
        var bytes = try await Self.packToBytes(root, in: dir)
        bytes[bytes.count / 2] ^= 0x40
        await #expect(throws: ArchiveError.self) {
            try await Self.extract(bytes, to: dir.path + "/flipped")
        }
    }
}
