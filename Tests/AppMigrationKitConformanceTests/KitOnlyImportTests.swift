// Written as Apple's snippets are: `import AppMigrationKit` and nothing of Foundation's, though
// the extension's requirements are declared in `URL` and `Progress` and the import uses
// `FileManager`. The system framework's module brings Foundation with it; this file compiled
// only once ours did too.
import AppMigrationKit
import AppMigrationTesting  // registration
import Testing

struct KitOnlyMigration: ResourcesExportingWithOptions, ResourcesImporting {
    typealias OptionsType = MigrationDefaultSupportedOptions
    var resourcesSizeEstimate: Int { 64 }
    var resourcesVersion: String { "1.0" }
    var resourcesCompressible: Bool { true }

    func exportResources(
        to archiver: sending ResourcesArchiver,
        request: MigrationRequestWithOptions<MigrationDefaultSupportedOptions>
    ) async throws {
        try await archiver.appendItem(at: appContainer.documentsDirectory.appending(path: "user_data.json"))
    }

    var resourcesImportProgress: Progress { Progress(totalUnitCount: 1) }

    func importResources(at importedDataURL: URL, request: ResourcesImportRequest) async throws {
        let source = importedDataURL.appending(path: "user_data.json")
        let destination = appContainer.documentsDirectory.appending(path: "imported.json")
        if FileManager.default.fileExists(atPath: destination.path) {
            try FileManager.default.removeItem(at: destination)
        }
        try FileManager.default.copyItem(at: source, to: destination)
    }
}

@Suite(.appMigrationExtension(KitOnlyMigration()))  // registration
struct KitOnlyImportTests {
    @Test func aRoundTripWrittenWithTheKitsImportAlone() async throws {
        let documents = KitOnlyMigration().appContainer.documentsDirectory
        try FileManager.default.createDirectory(at: documents, withIntermediateDirectories: true)
        try Data("{\"notes\":3}".utf8).write(to: documents.appending(path: "user_data.json"))
        let tester = try await AppMigrationTester(platform: .android)
        let result = try await tester.exportController.exportResources(request: nil, progress: nil)
        try await tester.importController.importResources(from: result.extractedResourcesURL, importRequest: nil, progress: nil)
        try await tester.importController.registerImportCompletion(with: .success)
        let imported = try Data(contentsOf: documents.appending(path: "imported.json"))
        #expect(String(decoding: imported, as: UTF8.self) == "{\"notes\":3}")
    }
}

/// The trait's `system:` sets the host's stall timeouts, as the README shows, in types that
/// `import AppMigrationKit` alone names: the engine's `WatchdogPolicy` and `PipelineStage` came
/// only with `import IndexedArchive`, and this file did not compile.
@Suite(
    .appMigrationExtension(
        KitOnlyMigration(),
        system: MigrationSystem(
            watchdogPolicy: WatchdogPolicy(stallTimeouts: [.extensionCode: .seconds(30)], defaultStallTimeout: .seconds(20)),
            importWatchdogPolicy: .uniform(.seconds(45))))
)
struct KitOnlyWatchdogPolicyTests {
    @Test func theStallTimeoutsSetThroughTheTraitAreTheHosts() async throws {
        let system = MigrationSystem(
            watchdogPolicy: WatchdogPolicy(stallTimeouts: [.extensionCode: .seconds(30)], defaultStallTimeout: .seconds(20)))
        #expect(system.watchdogPolicy.timeout(for: .extensionCode) == .seconds(30))
        #expect(system.watchdogPolicy.timeout(for: PipelineStage(rawValue: "compress")) == .seconds(20))
        let documents = KitOnlyMigration().appContainer.documentsDirectory
        try FileManager.default.createDirectory(at: documents, withIntermediateDirectories: true)
        try Data("{}".utf8).write(to: documents.appending(path: "user_data.json"))
        let tester = try await AppMigrationTester(platform: .android)
        let result = try await tester.exportController.exportResources(request: nil, progress: nil)
        #expect(FileManager.default.fileExists(atPath: result.extractedResourcesURL.appending(path: "user_data.json").path))
    }
}
