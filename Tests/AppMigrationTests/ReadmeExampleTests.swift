import AppMigration
import Foundation
import Testing

// The extension and host calls shown in README.md ("AppMigration API"), verbatim between the
// markers, so that the README's example is known to compile and work.

// README: extension
/// Moves a notes app's Documents; notes in format 1 had no title line, so import adds one.
struct NotesMigration: ResourcesExporting, ResourcesImporting {
    let resourcesImportProgress = Progress(totalUnitCount: 100)
    var resourcesSizeEstimate: Int { 1 << 20 }
    var resourcesVersion: String { "2" }
    var resourcesCompressible: Bool { true }

    func exportResources(to archiver: sending ResourcesArchiver, request: MigrationRequest) async throws {
        try await archiver.appendItem(at: appContainer.documentsDirectory, pathInArchive: "notes")
    }

    func importResources(at url: URL, request: ResourcesImportRequest) async throws {
        let notes = url.appending(path: "notes")
        for name in try FileManager.default.contentsOfDirectory(atPath: notes.path(percentEncoded: false)) {
            var text = try String(contentsOf: notes.appending(path: name), encoding: .utf8)
            if request.sourceVersion == "1" { text = "# Untitled\n" + text }
            try text.write(to: appContainer.documentsDirectory.appending(path: name), atomically: true, encoding: .utf8)
        }
    }
}
// README: end

@Suite struct ReadmeExampleTests {
    @Test func readmeExampleMigratesNotes() async throws {
        try await Scratch.with { scratch in
            let phone = try scratch.container("phone")
            let tablet = try scratch.container("tablet")
            try write("# Groceries\nmilk\n", to: "groceries.md", in: phone.documentsDirectory)
            let archive = scratch.url("notes.tar.xz")

            // README: host
            let system = MigrationSystem()
            let sent = try await system.exportResources(
                of: NotesMigration(), from: phone,
                request: MigrationRequest(destinationPlatform: .android), to: archive)
            print("version \(sent.version), \(sent.compressedBytes ?? 0) bytes")
            try await system.importResources(from: archive, into: tablet, using: NotesMigration())
            // README: end

            #expect(try read("groceries.md", in: tablet.documentsDirectory) == "# Groceries\nmilk\n")
            #expect(sent.version == "2")
        }
    }
}
