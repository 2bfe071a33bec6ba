import Foundation
import Tar
import TestSupport
import Testing

@testable import IndexedArchive

extension EngineSuites {
    /// `ExtractOptions.contentOutput` (`amk extract -O`): the selected files' content, in archive
    /// order, to a descriptor, through every way of reading, and nothing made on disk.
    @Suite struct ExtractorContentOutputTests {
        /// Every kind of member, and names an extraction to a folder would refuse: only content
        /// goes out, so their names are never resolved.
        static func mixedTar() throws -> [UInt8] {
            try tarStream([
                tarDirectory("app"),
                tarFile("app/a.txt", "alpha\n"),
                tarSymlink("app/link", to: "a.txt"),
                tarHardLink("app/hard", to: "app/a.txt"),
                tarDirectory("app/docs"),
                tarFile("app/docs/b.txt", "bravo\n"),
                tarFile("app/empty.txt", ""),
                tarFile("../outside.txt", "charlie\n"),
                tarFile("/etc/absolute.txt", "delta\n")
            ])
        }

        /// Opens a file in `dir` to receive the content, runs `body` with it, and returns what it
        /// received; the descriptor must still be open afterwards (the caller owns it).
        static func capture(in dir: TemporaryDirectory, _ body: (Int32) async throws -> Void) async throws -> [UInt8] {
            let path = dir.path + "/content-\(UInt64.random(in: 0...UInt64.max))"
            let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            try #require(fd >= 0)
            do {
                try await body(fd)
            } catch {
                close(fd)
                throw error
            }
            #expect(fcntl(fd, F_GETFD) != -1, "the output is left open")
            close(fd)
            return try await readBytes(path)
        }

        static func options(output fd: Int32, members: Set<String>? = nil) -> ExtractOptions {
            var options = ExtractOptions()
            options.contentOutput = fd
            options.members = members
            return options
        }

        @Test(arguments: ReadMode.allCases)
        func theFilesContentGoesOutInArchiveOrderAndNothingIsMade(_ mode: ReadMode) async throws {
            let dir = try TemporaryDirectory()
            let reader = try await hostileArchive(try Self.mixedTar(), mode: mode, at: dir.path + "/mixed.tar.xz")
            let out = dir.path + "/never-made"
            var summary: ExtractSummary?
            let content = try await Self.capture(in: dir) { fd in
                summary = try await reader.extract(to: out, options: Self.options(output: fd))
            }
            #expect(content == Array("alpha\nbravo\ncharlie\ndelta\n".utf8))
            #expect(summary?.bytes == UInt64(content.count))
            #expect(summary?.entries == 9, "every member was taken, each of its kind")
            #expect(!exists(out), "no destination is created")
        }

        /// A folder selects the files under it, a file itself; a selection reads the index's
        /// members by random access (indexed) or picks them out of the stream (sequential).
        @Test(arguments: ReadMode.allCases)
        func aSelectionSendsOnlyItsFiles(_ mode: ReadMode) async throws {
            let dir = try TemporaryDirectory()
            let reader = try await hostileArchive(try Self.mixedTar(), mode: mode, at: dir.path + "/mixed.tar.xz")
            let docs = try await Self.capture(in: dir) { fd in
                _ = try await reader.extract(to: dir.path + "/out", options: Self.options(output: fd, members: ["app/docs"]))
            }
            #expect(docs == Array("bravo\n".utf8))
            let two = try await Self.capture(in: dir) { fd in
                _ = try await reader.extract(
                    to: dir.path + "/out", options: Self.options(output: fd, members: ["app/docs/b.txt", "app/a.txt", "app/link"]))
            }
            #expect(two == Array("alpha\nbravo\n".utf8), "archive order, not the selection's")
            #expect(!exists(dir.path + "/out"))
        }

        /// A packed tree through a pipe (`amk extract -O -`): the same bytes as its files, in the
        /// order the archive stores them.
        @Test func aStreamSendsTheSameContent() async throws {
            let packed = try await PackedTree.make()
            let bytes = try await readBytes(packed.archive)
            let reader = try ArchiveReader(path: packed.archive)
            var expected: [UInt8] = []
            for entry in try await reader.entries() where entry.kind == .regular {
                expected += try await readBytes(packed.root + "/" + entry.path.dropFirst("src/".count))
            }
            #expect(expected.count > 1_000_000, "the tree has content to compare")
            let streamed = try await Self.capture(in: packed.dir) { fd in
                let result = try await feed(bytes) {
                    try await ArchiveStreamReader.extract(from: $0, to: packed.dir.path + "/out", options: Self.options(output: fd))
                }
                #expect(result.bytes == UInt64(expected.count))
            }
            #expect(streamed == expected)
            let direct = try await Self.capture(in: packed.dir) { fd in
                _ = try await reader.extract(to: packed.dir.path + "/out", options: Self.options(output: fd))
            }
            #expect(direct == expected)
            #expect(!exists(packed.dir.path + "/out"))
        }

        /// A member whose content fails its checksum has gone out by the time that is known: the
        /// extraction still fails, naming it, whether read whole or chosen.
        @Test func aDamagedMemberFailsAfterItsContent() async throws {
            let dir = try TemporaryDirectory()
            let tar = try tarStream([tarFile("first.txt", "fine\n"), tarFile("bad.txt", "tampered\n")])
            try await writeBytes(dir.path + "/c.tar.xz", try indexedArchive(tar: tar, tamper: { $0.entries[1].checksum = 42 }))
            let reader = try ArchiveReader(path: dir.path + "/c.tar.xz")
            for selection in [nil, Set(["bad.txt"])] as [Set<String>?] {
                var error: ArchiveError?
                _ = try await Self.capture(in: dir) { fd in
                    error = await expectArchiveError("bad checksum") {
                        try await reader.extract(to: dir.path + "/out", options: Self.options(output: fd, members: selection))
                    }
                }
                #expect(error?.code == .checksumMismatch)
                #expect(error?.member == "bad.txt", "\(String(describing: error))")
            }
            #expect(!exists(dir.path + "/out"))
        }

        /// The byte limit holds for content sent out as for files written.
        @Test func theByteLimitHolds() async throws {
            let dir = try TemporaryDirectory()
            let reader = try await hostileArchive(try Self.mixedTar(), mode: .indexed, at: dir.path + "/mixed.tar.xz")
            var options = Self.options(output: -1)
            options.maxBytes = 10
            var error: ArchiveError?
            let content = try await Self.capture(in: dir) { fd in
                options.contentOutput = fd
                error = await expectArchiveError("limit") { try await reader.extract(to: dir.path + "/out", options: options) }
            }
            #expect(error?.code == .limitExceeded)
            #expect(content == Array("alpha\n".utf8), "the member that passed the limit is not written")
        }
    }
}
