// Written for iOS from Apple's AppMigrationKit reference pages alone. The only lines that are not
// what the iOS test target would hold are marked "registration": the import of the trait and the
// trait on the suite (on iOS the test host registers the extension).
import AppMigrationKit
import AppMigrationTesting  // registration
import Foundation
import Testing

@Suite(.appMigrationExtension(NotesMigration()))  // registration
struct NotesMigrationTests {
    let notes = ["a.txt": "Buy milk", "b.txt": String(repeating: "Lorem ipsum dolor sit amet. ", count: 400)]
    let settings = #"{"sort":"modified"}"#

    /// Puts the app's data in its container, as the app would have.
    func writeAppData() throws -> MigrationDataContainer {
        let container = NotesMigration().appContainer
        let folder = container.documentsDirectory.appending(path: "Notes")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for (name, text) in notes {
            try Data(text.utf8).write(to: folder.appending(path: name))
        }
        try FileManager.default.createDirectory(at: container.applicationSupportDirectory, withIntermediateDirectories: true)
        try Data(settings.utf8).write(to: container.applicationSupportDirectory.appending(path: NotesMigration.settingsName))
        return container
    }

    func text(at url: URL) throws -> String {
        String(decoding: try Data(contentsOf: url), as: UTF8.self)
    }

    @Test func exportWithTheDefaultsDeliversTheAppendedItems() async throws {
        _ = try writeAppData()
        let tester = try await AppMigrationTester(platform: .android)
        let exporter: AppMigrationTester.AppExportController = try await tester.exportController
        let result: AppMigrationTester.ResourcesExportResult = try await exporter.exportResources()

        let extracted: URL = result.extractedResourcesURL
        #expect(try text(at: extracted.appending(path: "notes/a.txt")) == notes["a.txt"])
        #expect(try text(at: extracted.appending(path: "notes/b.txt")) == notes["b.txt"])
        #expect(
            try text(at: extracted.appending(path: NotesMigration.settingsName)) == settings,
            "appended without a pathInArchive: under the file's own name")

        let properties: AppMigrationTester.DeviceToDeviceExportProperties = result.exportProperties
        let contentBytes = notes.values.map(\.utf8.count).reduce(settings.utf8.count, +)
        #expect(properties.uncompressedBytes >= contentBytes)
        let compressed = try #require(properties.compressedBytes, "the extension's resources are compressible")
        #expect(compressed < properties.uncompressedBytes)
        let estimate = await NotesMigration().resourcesSizeEstimate
        #expect(properties.sizeEstimate == estimate)
        #expect(properties.version == NotesMigration().resourcesVersion)
    }

    @Test func exportWithARequestAndProgressCompletesTheCallersProgress() async throws {
        _ = try writeAppData()
        let tester = try await AppMigrationTester(platform: .android)
        let request = MigrationRequest(destinationPlatform: .android, options: [:])
        #expect(request.destinationPlatform == .android)
        #expect(request.options.isEmpty)

        let progress = Progress(totalUnitCount: 10)
        let result = try await tester.exportController.exportResources(request: request, progress: progress)
        #expect(progress.totalUnitCount == 10, "the caller's units are kept")
        #expect(progress.completedUnitCount == 10)
        #expect(progress.fractionCompleted == 1)
        #expect(result.exportProperties.uncompressedBytes > 0)
    }

    @Test func theGenericExportTakesARequestOrNil() async throws {
        _ = try writeAppData()
        let tester = try await AppMigrationTester(platform: .android)
        let foreign = MigrationRequestWithOptions<MediaMigration.MediaOption>(
            destinationPlatform: .android,
            options: [.photos: Data("all".utf8)])
        let withOptions = try await tester.exportController.exportResources(request: foreign, progress: nil)
        let withNone = try await tester.exportController.exportResources(
            request: nil as MigrationRequestWithOptions<MediaMigration.MediaOption>?)
        #expect(withOptions.exportProperties.version == "notes-3")
        #expect(withNone.exportProperties.uncompressedBytes == withOptions.exportProperties.uncompressedBytes)
    }

    @Test func roundTripRestoresTheDataAndReportsProgress() async throws {
        let container = try writeAppData()
        let tester = try await AppMigrationTester(platform: .android)
        let exported = try await tester.exportController.exportResources()

        // Clean the app's state before the import, as the reference advises.
        try FileManager.default.removeItem(at: container.documentsDirectory.appending(path: "Notes"))
        try FileManager.default.removeItem(at: container.applicationSupportDirectory.appending(path: NotesMigration.settingsName))

        let importer: AppMigrationTester.AppImportController = try await tester.importController
        let progress = Progress(totalUnitCount: 100)
        try await importer.importResources(from: exported.extractedResourcesURL, progress: progress)
        #expect(progress.completedUnitCount == 100)
        #expect(try text(at: container.documentsDirectory.appending(path: "Notes/a.txt")) == notes["a.txt"])
        #expect(try text(at: container.applicationSupportDirectory.appending(path: NotesMigration.settingsName)) == settings)

        try await importer.registerImportCompletion(with: .success)
        guard case .success? = MigrationStatus.importStatus else {
            Issue.record("expected success, got \(String(describing: MigrationStatus.importStatus))")
            return
        }
        MigrationStatus.clearImportStatus()
        #expect(MigrationStatus.importStatus == nil)
    }

    @Test func anImportRequestOfTheTestsChoiceReachesTheImporter() async throws {
        let container = try writeAppData()
        let tester = try await AppMigrationTester(platform: .android)
        let exported = try await tester.exportController.exportResources()

        let source = MigrationAppIdentifier(
            storeIdentifier: .googlePlay, bundleIdentifier: "com.example.notes.android",
            platform: .android)
        #expect(source.storeIdentifier.rawValue == MigrationAppIdentifier.StoreIdentifier.googlePlay.rawValue)
        #expect(source.bundleIdentifier == "com.example.notes.android")
        #expect(source.platform == .android)
        let request = ResourcesImportRequest(sourceAppIdentifier: source, sourceVersion: "notes-2")
        #expect(request.sourceAppIdentifier.bundleIdentifier == source.bundleIdentifier)
        #expect(request.sourceVersion == "notes-2")

        try await tester.importController.importResources(
            from: exported.extractedResourcesURL, importRequest: request,
            progress: nil)
        let told = try text(at: container.documentsDirectory.appending(path: "import-request.txt"))
        #expect(told == "googlePlay|com.example.notes.android|android|notes-2")
    }

    @Test func theDefaultImportRequestNamesTheTestersPlatformAndTheExportersVersion() async throws {
        let container = try writeAppData()
        let tester = try await AppMigrationTester(platform: .android)
        let exported = try await tester.exportController.exportResources()
        try await tester.importController.importResources(from: exported.extractedResourcesURL)
        let told = try text(at: container.documentsDirectory.appending(path: "import-request.txt")).split(separator: "|")
        #expect(told.count == 4)
        #expect(told.dropFirst(2).first == "android")
        #expect(told.last == "notes-3")
    }

    @Test func theAppContainerDescribesTheAppsFolders() throws {
        var container = NotesMigration().appContainer
        #expect(!container.bundleIdentifier.isEmpty)
        let root = container.containerRootDirectory.standardizedFileURL.path(percentEncoded: false)
        #expect(container.documentsDirectory.path(percentEncoded: false).hasPrefix(root))
        #expect(container.applicationSupportDirectory.path(percentEncoded: false).hasPrefix(root))

        // Both folders are settable.
        let documents = container.containerRootDirectory.appending(path: "Shared Documents")
        let support = container.containerRootDirectory.appending(path: "Library/Support")
        container.documentsDirectory = documents
        container.applicationSupportDirectory = support
        #expect(container.documentsDirectory == documents)
        #expect(container.applicationSupportDirectory == support)
        #expect(NotesMigration().appContainer.documentsDirectory != documents, "a copy was changed, not the app's")
    }

    @Test func aFailureRegisteredByTheTestIsReadBackWithItsDomainAndCode() async throws {
        let tester = try await AppMigrationTester(platform: .android)
        let failure = NSError(
            domain: "com.example.notes", code: 7,
            userInfo: [NSLocalizedDescriptionKey: "The notes could not be read."])
        try await tester.importController.registerImportCompletion(with: .failure(failure))
        guard case .failure(let error)? = MigrationStatus.importStatus else {
            Issue.record("expected a failure, got \(String(describing: MigrationStatus.importStatus))")
            return
        }
        #expect((error as NSError).domain == "com.example.notes")
        #expect((error as NSError).code == 7)
        #expect(error.localizedDescription == "The notes could not be read.")
        MigrationStatus.clearImportStatus()
        #expect(MigrationStatus.importStatus == nil)
    }
}
