import AppMigration
import Foundation
import SampleData

/// Builds the demo's container: SampleData's appdata corpus, the one the benchmark packs, at the
/// size asked for, plus what a migration must carry besides file contents.
///
/// One generator for the demo and the benchmark, so that the data a user first sees migrated has
/// the texture (text that compresses 3-5x, media that does not) the README's figures were measured
/// on, and a change to it shows in both.
enum DemoContainer {
    /// What was generated, for the report's first line.
    struct Made {
        var files = 0
        var links = 0
        var folders = 0
        var bytes = 0
        var kinds: [(name: String, bytes: Int)] = []
    }

    /// Fixed, so that every run migrates the same container and two reports can be compared.
    static let seed: UInt64 = 2026

    /// Writes the container into `container`'s standard directories (which must exist).
    ///
    /// The corpus comes within about 1% of `targetBytes` (see `AppDataCorpus.bytesAtScaleOne`);
    /// the report says what it came to.
    static func generate(in container: MigrationDataContainer, targetBytes: Int) throws -> Made {
        var writer = CorpusWriter(root: container.containerRootDirectory.path(percentEncoded: false))
        let corpus = AppDataCorpus(scale: Double(targetBytes) / Double(AppDataCorpus.bytesAtScaleOne), seed: seed)
        var made = Made()
        for part in AppDataCorpus.Part.allCases {
            let before = writer.bytes
            try corpus.generate(part, into: &writer)
            made.kinds.append((part.rawValue, writer.bytes - before))
        }
        let corpusBytes = writer.bytes

        // Modes, a link and an empty folder, as an app's container has them, so that the
        // migration is seen to restore more than bytes: a database only its owner may read, a
        // script that must stay executable, a shortcut to a photo, a folder with nothing
        // in it yet.
        try writer.setMode(0o600, of: "Library/Application Support/Messages/Messages.sqlite")
        let hook = "Library/Application Support/Hooks/after-import.sh"
        try writer.write(hook, Array("#!/bin/sh\necho migrated\n".utf8))
        try writer.setMode(0o755, of: hook)
        try writer.link("Documents/latest-photo.JPG", to: "Media/100APPLE/IMG_1000.JPG")
        try writer.createFolder("Documents/Drafts")
        made.kinds.append(("other", writer.bytes - corpusBytes))

        try moveLibraryIntoApplicationSupport(of: container)
        made.files = writer.files
        made.links = writer.links
        made.bytes = writer.bytes
        made.folders = try DemoComparison.walk(container).folders
        return made
    }

    /// The `sample` extension migrates Documents and Library/Application Support, as an app's own
    /// extension chooses what to carry, but the corpus is laid out as a whole container and also
    /// writes Library/Caches and Library/Preferences. Those move under Application Support (a
    /// rename each), so that every generated file is migrated and then checked.
    private static func moveLibraryIntoApplicationSupport(of container: MigrationDataContainer) throws {
        let library = container.libraryDirectory
        let support = container.applicationSupportDirectory
        for name in try FileManager.default.contentsOfDirectory(atPath: library.path(percentEncoded: false))
        where name != support.lastPathComponent {
            try FileManager.default.moveItem(at: library.appending(path: name), to: support.appending(path: name))
        }
    }
}
