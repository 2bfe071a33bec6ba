import Foundation
import TestSupport
import Testing

@testable import IndexedArchive

extension EngineSuites {
    /// `SystemCall.reaching`: a path longer than `PATH_MAX` still names its file.
    @Suite struct SystemCallTests {
        @Test func aShortPathGoesToTheCallAsItIs() throws {
            var seen = ""
            let result = SystemCall.reaching("/tmp/some/where") { path -> Int32 in
                seen = String(cString: path)
                return 7
            }
            #expect(seen == "/tmp/some/where" && result == 7)
        }

        @Test func pathsLongerThanPathMaxAreReachedThroughTheirFolder() throws {
            let dir = try TemporaryDirectory()
            let bottom = try makeTreeDeeperThanPathMax(under: dir.path)
            #expect(bottom.utf8.count > Int(PATH_MAX))
            // The kernel itself refuses the path: the test is not vacuous.
            var direct = stat()
            #expect(lstat(bottom + "/deep.txt", &direct) == -1 && errno == ENAMETOOLONG)

            let file = try SystemCall.lstat(bottom + "/deep.txt")
            #expect(file.st_mode & S_IFMT == S_IFREG && file.st_size == 4 && file.st_mode & 0o777 == 0o640)
            #expect(try SystemCall.lstat(bottom + "/link").st_mode & S_IFMT == S_IFLNK)
            #expect(try SystemCall.readlink(bottom + "/link") == Array("deep.txt".utf8))
            let fd = try SystemCall.open(bottom + "/deep.txt", O_RDONLY)
            defer { SystemCall.close(fd) }
            var bytes = [UInt8](repeating: 0, count: 8)
            let count = try bytes.withUnsafeMutableBytes { try SystemCall.read(fd, into: $0, path: nil) }
            #expect(Array(bytes[..<count]) == Array("deep".utf8))
            #expect(try FileSystem.systemListDirectory(bottom) == ["deep.txt", "link", "sub"])
            #expect(try ExtendedAttributes.read(path: bottom + "/deep.txt").isEmpty)
        }

        @Test func aMissingFolderOnALongPathFailsWithTheOriginalPath() throws {
            let dir = try TemporaryDirectory()
            let bottom = try makeTreeDeeperThanPathMax(under: dir.path)
            let missing = bottom.replacingOccurrences(of: "/ddd", with: "/eee", options: [], range: nil) + "/x"
            let error = #expect(throws: ArchiveError.self) { try SystemCall.lstat(missing) }
            #expect(error?.code == .io(errno: ENOENT), "\(String(describing: error))")
            #expect(error?.path == missing)
        }

        /// A path given to the engine that holds a NUL byte is refused with a typed error before
        /// anything is touched: the kernel would read it only up to the NUL and act on another
        /// file (`keep.tar.xz\0.new` replaced `keep.tar.xz`, `out\0/..` extracted into `out`).
        @Test func pathsHoldingANULAreRefusedBeforeAnythingIsTouched() async throws {
            let dir = try TemporaryDirectory()
            try dir.file("src/a.txt", "a\n")
            let archive = dir.path + "/keep.tar.xz"
            _ = try await ArchivePacker.pack([PackSource(path: dir.path + "/src", archivePath: "src")], to: .file(archive))
            let kept = try await readBytes(archive)
            func expectRefusal(_ what: String, _ body: () async throws -> Void) async {
                let error = await #expect(throws: ArchiveError.self, "\(what)") { try await body() }
                #expect(error?.code == .io(errno: EINVAL), "\(what): \(String(describing: error))")
                #expect(error?.message.contains("NUL byte") == true, "\(what): \(String(describing: error))")
            }
            await expectRefusal("pack") {
                _ = try await ArchivePacker.pack([PackSource(path: dir.path + "/src", archivePath: "src")], to: .file(archive + "\0.new"))
            }
            #expect(try await readBytes(archive) == kept, "the archive the name was cut to is untouched")
            #expect(listing(dir.path).sorted() == ["keep.tar.xz", "src"], "\(listing(dir.path))")
            await expectRefusal("open") { _ = try ArchiveReader(path: archive + "\0.other") }
            await expectRefusal("open asynchronously") { _ = try await ArchiveReader.open(path: archive + "\0.other") }
            let reader = try ArchiveReader(path: archive)
            await expectRefusal("extract") { _ = try await reader.extract(to: dir.path + "/out\0/../elsewhere") }
            await expectRefusal("salvage") { _ = try await ArchiveSalvager.salvage(path: archive, to: dir.path + "/out\0x") }
            let fd = open(archive, O_RDONLY)
            defer { close(fd) }
            await expectRefusal("extract a stream") { _ = try await ArchiveStreamReader.extract(from: fd, to: dir.path + "/out\0x") }
            #expect(!exists(dir.path + "/out"), "nothing was made where the name was cut")
        }
    }
}
