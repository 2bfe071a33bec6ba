import Foundation
import TestSupport
import Testing

@testable import IndexedArchive

extension EngineSuites {
    /// `FileSystem.confined(to:)`: what is opened must lie under the root once open, whatever the
    /// path said when it was checked.
    @Suite struct FileSystemTests {
        /// A root holding a file and a link to a folder outside (as a folder swapped for a link
        /// after `appendItem`'s check leaves it), and that outside folder with a secret.
        static func scene() throws -> (dir: TemporaryDirectory, root: String) {
            let dir = try TemporaryDirectory()
            try dir.file("root/inside.txt", "inside")
            try dir.file("outside/secret.txt", "secret")
            try dir.file("outside/sub/more.txt", "more")
            try FileManager.default.createSymbolicLink(atPath: dir.path + "/root/swapped", withDestinationPath: dir.path + "/outside")
            let root = try #require(
                realpath(dir.path + "/root", nil).map { pointer in
                    defer { free(pointer) }
                    return String(cString: pointer)
                })
            return (dir, root)
        }

        @Test func whatIsOpenedOutsideTheRootIsRefused() throws {
            let (dir, root) = try Self.scene()
            defer { withExtendedLifetime(dir) {} }
            let confined = FileSystem.system.confined(to: root)
            let fd = try confined.openForReading(root + "/inside.txt")
            confined.close(fd)
            #expect(try confined.listDirectory(root) == ["inside.txt", "swapped"])
            // The system's own calls go through the link on the way (only the last component is
            // not followed): the confined ones refuse what they opened.
            let through = try FileSystem.system.openForReading(root + "/swapped/secret.txt")
            FileSystem.system.close(through)
            for attempt in [
                { _ = try confined.openForReading(root + "/swapped/secret.txt") }, { _ = try confined.listDirectory(root + "/swapped/sub") }
            ] {
                let error = #expect(throws: ArchiveError.self) { try attempt() }
                #expect(error?.code == .unsafePath)
                #expect(error?.message.contains("outside") == true, "\(String(describing: error))")
            }
        }

        /// A root that is a prefix of a sibling's name does not confine the sibling in.
        @Test func aSiblingWhoseNameStartsWithTheRootIsOutside() throws {
            let dir = try TemporaryDirectory()
            try dir.file("root/a.txt", "a")
            try dir.file("rootless/b.txt", "b")
            let root = try #require(
                realpath(dir.path + "/root", nil).map { pointer in
                    defer { free(pointer) }
                    return String(cString: pointer)
                })
            let confined = FileSystem.system.confined(to: root)
            #expect(throws: ArchiveError.self) { _ = try confined.openForReading(root + "less/b.txt") }
        }
    }
}
