import Foundation
import Tar
import TestSupport
import Testing

@testable import IndexedArchive

extension EngineSuites {
    /// Sparse members of foreign archives (GNU tar's `--sparse`, and bsdtar's, which stores every
    /// sparse file so): extracted as the files they stand for, with their holes left as holes;
    /// and refused in an archive with our index, which never holds one.
    @Suite(.enabled(if: toolExists("tar") && toolExists("xz"), "needs GNU tar and xz"))
    struct ExtractorSparseTests {
        /// 4 MiB with 8 runs of data of 3000 bytes, ending in a hole, archived by GNU tar in
        /// `format` with a plain file after it.
        static func sparseTar(format: [String], in dir: TemporaryDirectory) async throws -> (tar: [UInt8], content: [UInt8]) {
            let realSize = 4 << 20
            var content = [UInt8](repeating: 0, count: realSize)
            try await runShell("mkdir -p src && truncate -s \(realSize) src/disk.img && printf 'after\\n' > src/z.txt", in: dir.path)
            let handle = try FileHandle(forWritingTo: dir.url("src/disk.img"))
            for run in 0..<8 {
                let bytes = [UInt8](repeating: UInt8(49 + run), count: 3000)
                let offset = run * 500_000 + run * 77
                content.replaceSubrange(offset..<(offset + bytes.count), with: bytes)
                try handle.seek(toOffset: UInt64(offset))
                try handle.write(contentsOf: Data(bytes))
            }
            try handle.close()
            let made = try await runTool(
                ["tar", "--sparse"] + format + ["-cf", dir.path + "/s.tar", "-C", dir.path + "/src", "disk.img", "z.txt"])
            try #require(made.status == 0, "\(made.stderr)")
            return (try await readBytes(dir.path + "/s.tar"), content)
        }

        static let formats = [["--format=gnu"], ["--format=pax", "--sparse-version=0.1"], ["--format=pax", "--sparse-version=1.0"]]

        @Test(arguments: formats)
        func holesStayHolesAndTheContentIsTheFiles(format: [String]) async throws {
            let dir = try TemporaryDirectory()
            let (tar, content) = try await Self.sparseTar(format: format, in: dir)
            let reader = try await hostileArchive(tar, mode: .sequential, at: dir.path + "/s.tar.xz")
            let entries = try await reader.entries()
            #expect(entries.map(\.path) == ["disk.img", "z.txt"] && entries.first?.size == UInt64(content.count))
            let out = dir.path + "/out"
            let summary = try await reader.extract(to: out)
            #expect(summary.entries == 2)
            #expect(try await readBytes(out + "/disk.img") == content)
            #expect(try await readBytes(out + "/z.txt") == Array("after\n".utf8))
            var info = stat()
            #expect(stat(out + "/disk.img", &info) == 0 && info.st_size == off_t(content.count))
            // 24,000 bytes of data: the file system holds a few blocks of it, not 4 MiB of zeros.
            #expect(Int(info.st_blocks) * 512 < content.count / 8, "\(info.st_blocks) blocks: the holes were written out")

            // One member read by scanning gives the zeros too.
            var read: [UInt8] = []
            try await reader.read(member: "disk.img") { read += $0 }
            #expect(read == content)
            #expect(try await reader.verify() == 2)
        }

        /// Holes take no space in a file, so the byte limit (there against bombs that fill the
        /// disk) does not count them; zeros sent to a descriptor are content like any other.
        @Test func theLimitCountsStoredBytesInFilesAndEveryByteOnOutput() async throws {
            let dir = try TemporaryDirectory()
            let (tar, content) = try await Self.sparseTar(format: ["--format=pax"], in: dir)
            let reader = try await hostileArchive(tar, mode: .sequential, at: dir.path + "/s.tar.xz")
            var options = ExtractOptions()
            options.maxBytes = 64 << 10
            _ = try await reader.extract(to: dir.path + "/out", options: options)
            #expect(try await readBytes(dir.path + "/out/disk.img") == content)

            let path = dir.path + "/content"
            let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            try #require(fd >= 0)
            defer { close(fd) }
            options.contentOutput = fd
            let refused = await expectArchiveError("-O over the limit") {
                try await reader.extract(to: dir.path + "/none", options: options)
            }
            #expect(refused?.code == .limitExceeded && refused?.member == "disk.img", "\(refused.map { "\($0)" } ?? "")")
            options.maxBytes = nil
            let whole = dir.path + "/whole"
            let wfd = open(whole, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            try #require(wfd >= 0)
            defer { close(wfd) }
            options.contentOutput = wfd
            _ = try await reader.extract(to: dir.path + "/none", options: options)
            #expect(try await readBytes(whole) == content + Array("after\n".utf8))
        }

        /// A file with zeros archived whole: data, 100 KiB of zeros, data, and zeros to an end
        /// that is no multiple of 4 KiB.
        static func zerosFile() -> [UInt8] {
            var content = [UInt8](repeating: 0, count: 1000 + (100 << 10) + 5000 + (50 << 10) + 123)
            for index in 0..<1000 { content[index] = UInt8(truncatingIfNeeded: index &* 7 | 1) }
            for index in (1000 + (100 << 10))..<(6000 + (100 << 10)) { content[index] = UInt8(truncatingIfNeeded: index | 1) }
            return content
        }

        /// `ExtractOptions.sparse` (`amk extract --sparse`): the zeros of a file archived whole
        /// become holes, wherever the decoded pieces happen to split the content, and do not
        /// count against the byte limit; without it every byte is written and counted.
        @Test(arguments: [ReadMode.sequential, .indexed])
        func zerosBecomeHolesOnRequest(mode: ReadMode) async throws {
            let dir = try TemporaryDirectory()
            let content = Self.zerosFile()
            let tar = try tarStream([(TarHeader(path: "db.sqlite", kind: .regular, size: UInt64(content.count)), content)])
            let path = dir.path + "/z.tar.xz"
            // Small blocks for the indexed archive: the content arrives in pieces cut at odd places.
            try await writeBytes(path, mode == .indexed ? try indexedArchive(tar: tar, chunk: 7777) : try await xzTool(tar))
            let reader = try ArchiveReader(path: path)
            var options = ExtractOptions()
            options.sparse = true
            options.maxBytes = 32 << 10
            let summary = try await reader.extract(to: dir.path + "/holes", options: options)
            #expect(summary.bytes == UInt64(content.count))
            #expect(try await readBytes(dir.path + "/holes/db.sqlite") == content)
            var info = stat()
            #expect(stat(dir.path + "/holes/db.sqlite", &info) == 0 && info.st_size == off_t(content.count))
            // The data touches 4 blocks; 38 of the file's 42 are zeros.
            #expect(Int(info.st_blocks) * 512 <= 6 * 4096, "\(info.st_blocks) blocks allocated")

            options.sparse = false
            let refused = await expectArchiveError("zeros counted") { try await reader.extract(to: dir.path + "/full", options: options) }
            #expect(refused?.code == .limitExceeded, "\(refused.map { "\($0)" } ?? "")")
            options.maxBytes = nil
            _ = try await reader.extract(to: dir.path + "/full", options: options)
            #expect(stat(dir.path + "/full/db.sqlite", &info) == 0 && Int(info.st_blocks) * 512 >= content.count - 4096)
        }

        /// Our index locates content by offset, which a sparse member's is not: an archive with
        /// an index and a sparse member is refused by every reading, before the member is written.
        @Test func anIndexedArchiveWithASparseMemberIsRefused() async throws {
            let dir = try TemporaryDirectory()
            let (tar, _) = try await Self.sparseTar(format: ["--format=gnu"], in: dir)
            // Entries with the file's size reach past the tar stream: refused on opening.
            let natural = await expectArchiveError("open") { try await hostileArchive(tar, mode: .indexed, at: dir.path + "/n.tar.xz") }
            #expect(natural?.message.contains("outside the tar stream") == true, "\(natural.map { "\($0)" } ?? "")")
            // An index made to pass that check gives the stored bytes' size: then every reading
            // meets the sparse header and refuses it.
            let crafted = try indexedArchive(tar: tar) { index in
                index.entries[0].size = index.entries[1].headerOffset - index.entries[0].dataOffset
            }
            try await writeBytes(dir.path + "/s.tar.xz", crafted)
            let reader = try ArchiveReader(path: dir.path + "/s.tar.xz")
            try #require(reader.mode == .indexed)
            let extracted = await expectArchiveError("extract") { try await reader.extract(to: dir.path + "/out") }
            #expect(
                extracted?.code == .corrupt && extracted?.message.contains("sparse member") == true, "\(extracted.map { "\($0)" } ?? "")")
            #expect(!exists(dir.path + "/out/disk.img"))
            let verified = await expectArchiveError("verify") { try await reader.verify() }
            #expect(verified?.message.contains("sparse member") == true)
            let one = await expectArchiveError("read one") { try await reader.read(member: "disk.img") { _ in } }
            #expect(one?.code == .corrupt && one?.message.contains("sparse") == true, "\(one.map { "\($0)" } ?? "")")
        }
        /// A sparse map may declare any size in a few hundred bytes (2^62 here, its data at the
        /// start): past what the file system takes, the member is refused saying so, where it
        /// said "seek: Invalid argument", and an extraction that goes on past member failures
        /// writes the file after it.
        @Test(.enabled(if: toolExists("python3"), "needs python3"))
        func aHoleLargerThanAnyFileIsNamed() async throws {
            let dir = try TemporaryDirectory()
            let made = try await runShell(
                """
                python3 -c "
                import tarfile, io
                with tarfile.open('huge.tar', 'w', format=tarfile.PAX_FORMAT) as t:
                    m = tarfile.TarInfo('GNUSparseFile.0/huge.img'); m.size = 4
                    m.pax_headers = {'GNU.sparse.size': str(2**62), 'GNU.sparse.numblocks': '1',
                        'GNU.sparse.offset': '0', 'GNU.sparse.numbytes': '4', 'GNU.sparse.name': 'huge.img'}
                    t.addfile(m, io.BytesIO(b'tail'))
                    m = tarfile.TarInfo('after.txt'); m.size = 3; t.addfile(m, io.BytesIO(b'end'))
                "
                """, in: dir.path)
            try #require(made.status == 0, "\(made.stderr)")
            let reader = try await hostileArchive(
                try await readBytes(dir.path + "/huge.tar"), mode: .sequential, at: dir.path + "/h.tar.xz")
            let error = await expectArchiveError("a 2^62-byte member") { try await reader.extract(to: dir.path + "/out") }
            #expect(error?.code == .io(errno: EFBIG) && error?.member == "huge.img", "\(error.map { "\($0)" } ?? "")")
            #expect(error?.message.contains("larger than this file system allows") == true, "\(error.map { "\($0)" } ?? "")")
            #expect(!exists(dir.path + "/out/huge.img"))
            var options = ExtractOptions()
            options.continuesAfterMemberFailures = true
            let summary = try await reader.extract(to: dir.path + "/out2", options: options)
            #expect(summary.failures.map(\.member) == ["huge.img"] && summary.entries == 1)
            // Its 4 bytes of data were written before the hole failed, and went with its file:
            // the summary counts only what stays (it counted them).
            #expect(summary.bytes == 3)
            #expect(try await readBytes(dir.path + "/out2/after.txt") == Array("end".utf8))
        }
    }
}
