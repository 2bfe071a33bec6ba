import Foundation
import TestSupport
import Testing

@testable import IndexedArchive

/// A tree deeper than `PATH_MAX`, made with descriptors (no path to it fits in one call): `levels`
/// folders of 200 `d`s under `root`, with `deep.txt` ("deep"), `link` (to `deep.txt`) and
/// `sub/` at the bottom. Returns the path of the bottom folder.
func makeTreeDeeperThanPathMax(under root: String, levels: Int = 25) throws -> String {
    let name = String(repeating: "d", count: 200)
    var folder = open(root, O_RDONLY | O_DIRECTORY)
    guard folder >= 0 else { throw CocoaError(.fileNoSuchFile) }
    var path = root
    for _ in 0..<levels {
        guard mkdirat(folder, name, 0o755) == 0 else { throw CocoaError(.fileWriteUnknown) }
        let next = openat(folder, name, O_RDONLY | O_DIRECTORY)
        close(folder)
        guard next >= 0 else { throw CocoaError(.fileNoSuchFile) }
        folder = next
        path += "/" + name
    }
    defer { close(folder) }
    let file = openat(folder, "deep.txt", O_WRONLY | O_CREAT | O_EXCL, 0o640)
    guard file >= 0, write(file, "deep", 4) == 4 else { throw CocoaError(.fileWriteUnknown) }
    close(file)
    guard symlinkat("deep.txt", folder, "link") == 0, mkdirat(folder, "sub", 0o700) == 0 else {
        throw CocoaError(.fileWriteUnknown)
    }
    return path
}

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
    }
}
