import AppMigration
import Foundation
import Testing

@Suite struct AppMigrationTesterTests {
    @Test func testerOutsideARegistrationScopeSaysWhatIsMissing() async throws {
        let error = await #expect(throws: AppMigrationError.self) {
            _ = try await AppMigrationTester(platform: .android)
        }
        #expect(error?.code == .noExtensionRegistered)
    }

    /// An exporter with options of its own.
    struct CategoryExporter: ResourcesExportingWithOptions {
        enum Category: String, CaseIterable, Hashable, Sendable {
            case photos, messages
        }
        typealias OptionsType = Category
        var resourcesSizeEstimate: Int { 1 }
        var resourcesVersion: String { "1" }
        var resourcesCompressible: Bool { true }
        func exportResources(to archiver: sending ResourcesArchiver, request: MigrationRequestWithOptions<Category>) async throws {
            let docs = appContainer.documentsDirectory
            if request.options[.photos] != nil {
                try await archiver.appendItem(at: docs.appending(path: "photos"))
            }
            if let payload = request.options[.messages] {
                try await archiver.appendItem(at: docs.appending(path: "user_data.json"),
                                              pathInArchive: String(decoding: payload, as: UTF8.self))
            }
        }
    }

    @Test(.appMigrationExtension(CategoryExporter()))
    func optionsReachTheExtensionByRawValue() async throws {
        let tester = try await AppMigrationTester(platform: .android)
        let request = MigrationRequestWithOptions<CategoryExporter.Category>(
            destinationPlatform: .android, options: [.photos: Data(), .messages: Data("chat/messages.json".utf8)])
        let result = try await tester.exportController.exportResources(request: request, progress: nil)
        #expect(files(under: result.extractedResourcesURL) == ["chat/messages.json", "photos/a.heic"])
        // A default request carries no options: nothing is exported.
        let plain = try await tester.exportController.exportResources(request: nil, progress: nil)
        #expect(files(under: plain.extractedResourcesURL).isEmpty)
    }

    @Test(.appMigrationExtension(DefensiveMigration()))
    func importOnlyExtensionCannotExport() async throws {
        let tester = try await AppMigrationTester(platform: .android)
        let error = await #expect(throws: AppMigrationError.self) {
            _ = try await tester.exportController.exportResources(request: nil, progress: nil)
        }
        #expect(error?.code == .unsupportedExtension)
    }

    @Test(.appMigrationExtension(AppDataMigration()))
    func exportProgressEndsCompleteAndImportWritesTheImportContainer() async throws {
        let tester = try await AppMigrationTester(platform: .android)
        let progress = Progress(totalUnitCount: 0)
        let result = try await tester.exportController.exportResources(request: nil, progress: progress)
        #expect(progress.totalUnitCount == Int64(result.exportProperties.sizeEstimate))
        #expect(progress.completedUnitCount == progress.totalUnitCount)
        try await tester.importController.importResources(from: result.extractedResourcesURL, importRequest: nil, progress: nil)
        // The current container is the import side's, so the app's view after migration is checked here.
        let docs = MigrationDataContainer.current.documentsDirectory
        #expect(try read("profile.json", in: docs) == SampleData.profile)
        try await tester.importController.registerImportCompletion(with: .success)
        guard case .success? = MigrationStatus.importStatus else {
            Issue.record("expected success")
            return
        }
    }
}
