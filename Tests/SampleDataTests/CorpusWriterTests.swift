import Foundation
import SampleData
import Testing

import class TestSupport.TemporaryDirectory

/// The writer makes what a corpus and the demo ask for: files in folders made as needed, links
/// whose target is kept as written, empty folders, exact modes; and it says what it made.
struct CorpusWriterTests {
    @Test func writesFilesInNewFoldersAndCountsThem() throws {
        let (tree, writer) = try CorpusTree.generate { writer in
            try writer.write("top.txt", Array("top".utf8))
            try writer.write("a/b/c/deep.bin", [0, 1, 2, 255])
            try writer.write("a/b/c/deep.bin", [9])  // replaced, as a regenerated file is
            try writer.write("a/empty", [])
        }
        #expect(writer.files == 4)
        #expect(writer.bytes == 3 + 4 + 1 + 0)
        #expect(tree.files == ["top.txt": Array("top".utf8), "a/b/c/deep.bin": [9], "a/empty": []])
        #expect(tree.entries["a/b"] == .folder)
    }

    @Test func makesLinksFoldersAndModes() throws {
        let (tree, writer) = try CorpusTree.generate { writer in
            try writer.write("Documents/Media/photo.jpg", [0xFF, 0xD8])
            try writer.link("Documents/latest.jpg", to: "Media/photo.jpg")
            try writer.link("Documents/Nested/dangling", to: "../../nowhere")
            try writer.createFolder("Documents/Drafts/Empty")
            try writer.write("Support/hook.sh", Array("#!/bin/sh\n".utf8))
            try writer.setMode(0o755, of: "Support/hook.sh")
            try writer.write("Support/private.db", [1])
            try writer.setMode(0o600, of: "Support/private.db")
            try writer.setMode(0o700, of: "Documents/Drafts")
        }
        #expect(writer.files == 3)
        #expect(writer.links == 2)
        #expect(tree.entries["Documents/latest.jpg"] == .link(target: "Media/photo.jpg"))
        #expect(tree.entries["Documents/Nested/dangling"] == .link(target: "../../nowhere"))
        #expect(tree.entries["Documents/Drafts/Empty"] == .folder)
        #expect(tree.entries["Support/hook.sh"] == .file(bytes: Array("#!/bin/sh\n".utf8), mode: 0o755))
        #expect(tree.entries["Support/private.db"] == .file(bytes: [1], mode: 0o600))
    }

    /// A mode is set exactly: neither the umask nor the mode a file was created with shows through.
    @Test func setModeIsExact() throws {
        let directory = try TemporaryDirectory(prefix: "amk-sampledata")
        var writer = CorpusWriter(root: directory.path)
        try writer.write("f", [1])
        for mode in [0o000, 0o640, 0o777] {
            try writer.setMode(mode, of: "f")
            let attributes = try FileManager.default.attributesOfItem(atPath: directory.path("f"))
            #expect(attributes[.posixPermissions] as? Int == mode)
        }
    }

    /// A failure names the path and the reason, so that whoever runs the benchmark or the demo
    /// can tell which disk or folder is the problem.
    @Test func failuresSayWhatAndWhere() throws {
        let directory = try TemporaryDirectory(prefix: "amk-sampledata")
        var writer = CorpusWriter(root: directory.path)
        try writer.write("file", [1])
        let error = try #require(throws: (any Error).self) { try writer.link("file", to: "elsewhere") }
        #expect("\(error)".contains(directory.path("file")) && "\(error)".contains("symlink"), "\(error)")
        #expect(throws: (any Error).self) { try writer.setMode(0o600, of: "missing") }
        #expect(throws: (any Error).self) { try writer.write("file/under-a-file", [1]) }
        #expect(writer.files == 1 && writer.links == 0)
    }
}
