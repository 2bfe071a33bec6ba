import AppMigration
import Foundation

/// An extension that exports `Documents` and `Library` whole and imports them by merging what it
/// received into the container the plain way: `fileExists`, `contentsOfDirectory` and `moveItem`,
/// calls that follow a symbolic link given where a folder was expected.
///
/// It is what an app's importer (and, before the link fixes, amk's own) typically looks like, so
/// it relies on the host never staging a link that leads out of the staging folder: the link
/// tests use it to check that the host keeps that promise.
struct MergingMigration: ResourcesExporting, ResourcesImporting {
    let resourcesImportProgress = Progress(totalUnitCount: 100)
    static let folders = ["Documents", "Library"]

    var resourcesVersion: String { "1" }
    var resourcesCompressible: Bool { true }
    var resourcesSizeEstimate: Int { get async { 4096 } }

    func exportResources(to archiver: sending ResourcesArchiver, request: MigrationRequest) async throws {
        let root = appContainer.containerRootDirectory
        for folder in Self.folders {
            let url = root.appending(path: folder, directoryHint: .notDirectory)
            // lstat: a link there is exported as the link it is (the engine never follows one).
            guard (try? FileManager.default.attributesOfItem(atPath: url.path(percentEncoded: false))) != nil else { continue }
            try await archiver.appendItem(at: url, pathInArchive: folder)
        }
    }

    func importResources(at url: URL, request: ResourcesImportRequest) async throws {
        let root = appContainer.containerRootDirectory
        for folder in Self.folders {
            let received = url.appending(path: folder, directoryHint: .isDirectory)
            guard FileManager.default.fileExists(atPath: received.path(percentEncoded: false)) else { continue }
            try Self.merge(received, into: root.appending(path: folder, directoryHint: .isDirectory))
        }
        resourcesImportProgress.completedUnitCount = resourcesImportProgress.totalUnitCount
    }

    static func merge(_ source: URL, into destination: URL) throws {
        let manager = FileManager.default
        try manager.createDirectory(at: destination, withIntermediateDirectories: true)
        for name in try manager.contentsOfDirectory(atPath: source.path(percentEncoded: false)) {
            let from = source.appending(path: name, directoryHint: .notDirectory)
            let to = destination.appending(path: name, directoryHint: .notDirectory)
            if isDirectory(from), isDirectory(to) {
                try merge(from, into: to)
            } else {
                if (try? manager.attributesOfItem(atPath: to.path(percentEncoded: false))) != nil { try manager.removeItem(at: to) }
                try manager.moveItem(at: from, to: to)
            }
        }
    }

    static func isDirectory(_ url: URL) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: url.path(percentEncoded: false), isDirectory: &isDirectory)
            && isDirectory.boolValue
    }
}

/// A folder outside every container, holding files that no import may move, change or delete.
struct OutsideFolder {
    let url: URL

    /// Creates `name` under `scratch` with two files, one of them nested.
    init(_ name: String = "outside", in scratch: Scratch) throws {
        url = scratch.url(name)
        try write("private to another app\n", to: "secret.txt", in: url)
        try write("nested secret\n", to: "nested/deeper.txt", in: url)
    }

    var path: String { url.path(percentEncoded: false) }

    /// Its items and bytes now.
    func contents() throws -> [String: Data] {
        try snapshot(url, excluding: [])
    }
}
