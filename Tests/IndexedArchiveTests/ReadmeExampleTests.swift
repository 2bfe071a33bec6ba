import Foundation
import IndexedArchive
import TestSupport
import Testing

/// The engine example in README.md, verbatim inside `example(_:)`: if the API drifts, this fails
/// to compile.
@Suite struct ReadmeExampleTests {
    func example(_ dir: String) async throws {
        // Pack two folders under names of our choosing; preset 6, 16 MiB blocks, every core.
        var options = PackOptions()
        options.metadata = ["resourcesVersion": "3"]
        let summary = try await ArchivePacker.pack(
            [
                PackSource(path: "\(dir)/Documents", archivePath: "docs"),
                PackSource(path: "\(dir)/Library", archivePath: "lib")
            ],
            to: .file("\(dir)/app.tar.xz"), options: options)
        print("\(summary.entries) entries, \(summary.tarBytes) -> \(summary.archiveBytes) bytes")

        // List without decompressing, read one member, verify, extract safely.
        let reader = try ArchiveReader(path: "\(dir)/app.tar.xz")
        for entry in try await reader.entries() where entry.kind == .regular {
            print(entry.path, entry.size)
        }
        let notes = try await reader.contents(of: "docs/notes.txt")
        try await reader.verify()
        try await reader.extract(to: "\(dir)/restored")
        print(notes.count, try await reader.metadata()["resourcesVersion"] ?? "?")
    }

    @Test func readmeExampleRuns() async throws {
        let dir = try TemporaryDirectory()
        try dir.file("Documents/notes.txt", "remember the milk")
        try dir.file("Library/prefs.json", "{\"theme\":\"dark\"}")
        try await example(dir.path)
        let restored = try String(contentsOfFile: dir.path + "/restored/docs/notes.txt", encoding: .utf8)
        #expect(restored == "remember the milk")
    }
}
