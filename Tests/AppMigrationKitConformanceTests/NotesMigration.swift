// Written for iOS from Apple's AppMigrationKit reference pages alone: this file compiles there
// unchanged. (Registration, which iOS does through the test host, is in the test suites.)
import AppMigrationKit
import Foundation

/// An app's migration extension: it exports its notes folder and settings file, and imports them
/// back, reporting progress through one stored `Progress`.
struct NotesMigration: ResourcesExporting, ResourcesImporting {
    static let settingsName = "settings.json"

    // MARK: ResourcesExportingWithOptions, through ResourcesExporting

    var resourcesSizeEstimate: Int {
        get async {
            let notes = appContainer.documentsDirectory.appending(path: "Notes")
            let names = (try? FileManager.default.contentsOfDirectory(atPath: notes.path(percentEncoded: false))) ?? []
            var bytes = 0
            for name in names {
                let attributes = try? FileManager.default.attributesOfItem(
                    atPath: notes.appending(path: name).path(percentEncoded: false))
                bytes += (attributes?[.size] as? Int) ?? 0
            }
            return bytes + 4096
        }
    }

    var resourcesVersion: String { "notes-3" }

    var resourcesCompressible: Bool { true }

    func exportResources(to archiver: sending ResourcesArchiver, request: MigrationRequest) async throws {
        // A folder under a name of our choosing, and a file under its own name.
        try await archiver.appendItem(
            at: appContainer.documentsDirectory.appending(path: "Notes"),
            pathInArchive: "notes")
        try await archiver.appendItem(at: appContainer.applicationSupportDirectory.appending(path: Self.settingsName))
    }

    // MARK: ResourcesImporting

    let resourcesImportProgress = Progress(totalUnitCount: 2)

    func importResources(at url: URL, request: ResourcesImportRequest) async throws {
        let fileManager = FileManager.default
        let notes = appContainer.documentsDirectory.appending(path: "Notes")
        if fileManager.fileExists(atPath: notes.path(percentEncoded: false)) {
            try fileManager.removeItem(at: notes)
        }
        try fileManager.moveItem(at: url.appending(path: "notes"), to: notes)
        resourcesImportProgress.completedUnitCount = 1

        let settings = appContainer.applicationSupportDirectory.appending(path: Self.settingsName)
        if fileManager.fileExists(atPath: settings.path(percentEncoded: false)) {
            try fileManager.removeItem(at: settings)
        }
        try fileManager.moveItem(at: url.appending(path: Self.settingsName), to: settings)

        // What the importer was told, for the tests to check.
        let told =
            "\(request.sourceAppIdentifier.storeIdentifier.rawValue)|\(request.sourceAppIdentifier.bundleIdentifier)|"
            + "\(request.sourceAppIdentifier.platform.rawValue)|\(request.sourceVersion)"
        try Data(told.utf8).write(to: appContainer.documentsDirectory.appending(path: "import-request.txt"))
        resourcesImportProgress.completedUnitCount = 2
    }
}

/// An exporter with options of its own: the destination asks for categories.
struct MediaMigration: ResourcesExportingWithOptions {
    enum MediaOption: String, CaseIterable, Hashable, Sendable {
        case photos
        case videos
    }

    typealias OptionsType = MediaOption

    var resourcesSizeEstimate: Int { get async { 1 << 20 } }
    var resourcesVersion: String { "media-1" }
    /// Media is compressed already.
    var resourcesCompressible: Bool { false }

    func exportResources(
        to archiver: sending ResourcesArchiver,
        request: MigrationRequestWithOptions<MediaOption>
    ) async throws {
        let media = appContainer.documentsDirectory.appending(path: "Media")
        for option in MediaOption.allCases where request.options[option] != nil {
            try await archiver.appendItem(at: media.appending(path: option.rawValue), pathInArchive: option.rawValue)
        }
        // What was asked, with each option's payload, in the archive too.
        let asked = request.options
            .map { "\($0.key.rawValue)=\(String(decoding: $0.value, as: UTF8.self))" }
            .sorted()
            .joined(separator: ",")
        let manifest = appContainer.containerRootDirectory.appending(path: "tmp/request.txt")
        try Data("\(request.destinationPlatform.rawValue):\(asked)".utf8).write(to: manifest)
        try await archiver.appendItem(at: manifest)
    }
}

/// An importer that fails with an error of the app's own domain.
struct RejectingImporter: ResourcesImporting {
    static let errorDomain = "com.example.notes.import"
    static let errorCode = 42

    let resourcesImportProgress = Progress(totalUnitCount: 1)

    func importResources(at url: URL, request: ResourcesImportRequest) async throws {
        throw NSError(
            domain: Self.errorDomain, code: Self.errorCode,
            userInfo: [NSLocalizedDescriptionKey: "The notes were written by a newer app."])
    }
}

/// An importer with the property as the reference's example writes it: a new `Progress` at each
/// read, so nothing it reports can be followed.
struct QuietImporter: ResourcesImporting {
    var resourcesImportProgress: Progress {
        Progress(totalUnitCount: 100)
    }

    func importResources(at url: URL, request: ResourcesImportRequest) async throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: url.path(percentEncoded: false))
        for name in names {
            try FileManager.default.copyItem(
                at: url.appending(path: name),
                to: appContainer.documentsDirectory.appending(path: "quiet-\(name)"))
        }
    }
}
