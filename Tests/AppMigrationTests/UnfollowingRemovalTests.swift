import Foundation
import Testing

@testable import AppMigration

/// Tests `UnfollowingRemoval.swift`: what the host removes, it removes without following links.
@Suite struct UnfollowingRemovalTests {
    /// Links to a folder, to a file and dangling, at the top and deep down: each goes, what it
    /// points to stays.
    @Test func linksAreRemovedNotWhatTheyPointTo() async throws {
        try await Scratch.with { scratch in
            let outside = try OutsideFolder(in: scratch)
            let before = try outside.contents()
            let root = scratch.url("root").path(percentEncoded: false)
            try write("x", to: "doomed/deep/file.txt", in: scratch.url("root"))
            for (link, target) in [
                ("doomed/to-folder", outside.path), ("doomed/deep/to-file", outside.path + "/secret.txt"),
                ("doomed/deep/dangling", "/no/such/place"), ("top-link", outside.path)
            ] {
                try FileManager.default.createSymbolicLink(atPath: root + "/" + link, withDestinationPath: target)
            }
            try write("stays", to: "kept/file.txt", in: scratch.url("root"))
            try UnfollowingRemoval.removeChildren(of: root, followingFinalLink: false) { $0 != "kept" }
            #expect(try outside.contents() == before)
            #expect(try FileManager.default.contentsOfDirectory(atPath: root) == ["kept"])
            #expect(try read("kept/file.txt", in: scratch.url("root")) == "stays")
        }
    }

    /// A folder that must be real (the host's own) is refused when it is a link; one that may be
    /// a link (a container root) is followed, and only its children go.
    @Test func theGivenFolderIsFollowedOnlyWhenAllowed() async throws {
        try await Scratch.with { scratch in
            let outside = try OutsideFolder(in: scratch)
            let before = try outside.contents()
            let link = scratch.url("link").path(percentEncoded: false)
            try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: outside.path)
            let error = #expect(throws: DurableFileError.self) {
                try UnfollowingRemoval.removeChildren(of: link, followingFinalLink: false) { _ in true }
            }
            #expect(error?.errno == ELOOP || error?.errno == ENOTDIR, "\(String(describing: error))")
            #expect(try outside.contents() == before)
            try UnfollowingRemoval.removeChildren(of: link, followingFinalLink: true) { $0 == "nested" }
            #expect(try outside.contents().keys.sorted() == ["secret.txt"])
        }
    }

    @Test func aMissingFolderHasNothingToRemove() throws {
        try UnfollowingRemoval.removeChildren(of: "/no/such/folder/\(UUID().uuidString)", followingFinalLink: false) { _ in true }
    }

    /// Names are the kernel's bytes: one that is not UTF-8 is removed too.
    @Test func aNameThatIsNotUTF8IsRemoved() async throws {
        try await Scratch.with { scratch in
            let root = scratch.url("root").path(percentEncoded: false)
            try FileManager.default.createDirectory(atPath: root + "/doomed", withIntermediateDirectories: true)
            let bad: [CChar] = Array((root + "/doomed/").utf8CString.dropLast()) + [CChar(bitPattern: 0xff), 0x61, 0]
            let fd = open(bad, O_WRONLY | O_CREAT | O_EXCL, 0o644)
            #expect(fd >= 0)
            close(fd)
            try UnfollowingRemoval.removeChildren(of: root, followingFinalLink: false) { _ in true }
            #expect(try FileManager.default.contentsOfDirectory(atPath: root).isEmpty)
        }
    }

    /// A tree whose paths are longer than `PATH_MAX` (an archive can build one): removed whole,
    /// so that a staging folder holding it does not outlive its import.
    @Test func aTreeDeeperThanPathMaxIsRemoved() async throws {
        try await Scratch.with { scratch in
            let root = scratch.url("root").path(percentEncoded: false)
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            var fd = open(root, O_RDONLY | O_DIRECTORY)
            let component = String(repeating: "d", count: 200)
            for _ in 0..<30 {  // 30 * 201 bytes: past PATH_MAX (4096)
                #expect(mkdirat(fd, component, 0o755) == 0)
                let next = openat(fd, component, O_RDONLY | O_DIRECTORY)
                close(fd)
                fd = next
            }
            let file = openat(fd, "leaf.txt", O_WRONLY | O_CREAT, 0o644)
            close(file)
            close(fd)
            try UnfollowingRemoval.removeChildren(of: root, followingFinalLink: false) { _ in true }
            #expect(try FileManager.default.contentsOfDirectory(atPath: root).isEmpty)
        }
    }

    /// Folders restored read-only from an archive are still emptied and removed.
    @Test func readOnlyFoldersAreRemoved() async throws {
        try await Scratch.with { scratch in
            let root = scratch.url("root").path(percentEncoded: false)
            try write("x", to: "doomed/locked/file.txt", in: scratch.url("root"))
            chmod(root + "/doomed/locked", 0o500)
            chmod(root + "/doomed", 0o000)
            try UnfollowingRemoval.removeChildren(of: root, followingFinalLink: false) { _ in true }
            #expect(try FileManager.default.contentsOfDirectory(atPath: root).isEmpty)
        }
    }
}
