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
    }
}
