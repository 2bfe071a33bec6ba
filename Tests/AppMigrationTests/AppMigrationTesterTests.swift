import AppMigration
import Foundation
import IndexedArchive
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
                try await archiver.appendItem(
                    at: docs.appending(path: "user_data.json"),
                    pathInArchive: String(decoding: payload, as: UTF8.self))
            }
        }
    }

    /// An exporter that stores a link to an absolute path, which a host import refuses.
    struct AbsoluteLinkExporter: ResourcesExporting {
        var resourcesSizeEstimate: Int { 1 }
        var resourcesVersion: String { "1" }
        var resourcesCompressible: Bool { true }
        func exportResources(to archiver: sending ResourcesArchiver, request: MigrationRequest) async throws {
            let link = appContainer.documentsDirectory.appending(path: "shared-config")
            try FileManager.default.createSymbolicLink(atPath: link.path(percentEncoded: false), withDestinationPath: "/etc/hostname")
            try await archiver.appendItem(at: link)
        }
    }

    /// The tester extracts an export as an import would: a link leading out of the folder fails
    /// it with the import's own error. It used to be extracted, so the round trip passed while
    /// the host's import of the same archive failed.
    @Test(.appMigrationExtension(AbsoluteLinkExporter()))
    func aLinkTheImportRefusesFailsTheTestersExportToo() async throws {
        let tester = try await AppMigrationTester(platform: .android)
        let error = await #expect(throws: AppMigrationError.self) { _ = try await tester.exportController.exportResources() }
        #expect(error?.code == .unreadableArchive, "\(String(describing: error))")
        #expect(
            error?.message.contains("unsafe member") == true && error?.message.contains("/etc/hostname") == true,
            "\(String(describing: error))")
    }

    /// An exporter without options that writes down how many it received.
    struct OptionCountingExporter: ResourcesExporting {
        var resourcesSizeEstimate: Int { 1 }
        var resourcesVersion: String { "1" }
        var resourcesCompressible: Bool { true }
        func exportResources(to archiver: sending ResourcesArchiver, request: MigrationRequest) async throws {
            let note = appContainer.temporaryDirectory.appending(path: "options.txt")
            try Data("\(request.options.count)".utf8).write(to: note)
            try await archiver.appendItem(at: note)
        }
    }

    @Test(.appMigrationExtension(OptionCountingExporter()))
    func foreignOptionsNeverReachAResourcesExportingExtension() async throws {
        let tester = try await AppMigrationTester(platform: .android)
        let request = MigrationRequestWithOptions<CategoryExporter.Category>(
            destinationPlatform: .android, options: [.photos: Data(), .messages: Data("x".utf8)])
        let result = try await tester.exportController.exportResources(request: request, progress: nil)
        #expect(try read("options.txt", in: result.extractedResourcesURL) == "0")
    }

    /// Appends 3 MiB of a 6 MiB estimate, waits until the caller's progress shows some of it
    /// written, then writes down what the progress says and appends that too.
    struct ProgressWatchingExporter: ResourcesExporting {
        var watched = Progress(totalUnitCount: 0)
        var resourcesSizeEstimate: Int { 6 << 20 }
        var resourcesVersion: String { "1" }
        var resourcesCompressible: Bool { true }
        func exportResources(to archiver: sending ResourcesArchiver, request: MigrationRequest) async throws {
            let big = appContainer.temporaryDirectory.appending(path: "big.bin")
            try Data((0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }).write(to: big)
            // The host's bytes go to a child of the caller's progress: its fraction moves at once,
            // its completed count only when the child ends.
            let before = watched.fractionCompleted
            try await archiver.appendItem(at: big)
            // The progress follows the blocks written, which trail the appends: the first two
            // 1 MiB chunks are full, and written shortly.
            let deadline = ContinuousClock.now + .seconds(20)
            while watched.fractionCompleted == before && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(5))
            }
            let seen = appContainer.temporaryDirectory.appending(path: "seen.txt")
            try Data("\(watched.completedUnitCount)/\(watched.totalUnitCount)/\(watched.fractionCompleted)".utf8).write(to: seen)
            try await archiver.appendItem(at: seen)
        }
    }

    @Test func exportProgressIsAChildThatTakesTheCallersRemainingUnits() async throws {
        try await Scratch.with { scratch in
            let container = try scratch.container("app")
            let progress = Progress(totalUnitCount: 100)
            progress.completedUnitCount = 40  // the caller's own work before the export
            let archive = scratch.url("a.tar.xz")
            try await quickSystem.exportResources(
                of: ProgressWatchingExporter(watched: progress), from: container,
                request: MigrationRequest(destinationPlatform: .android), to: archive,
                progress: progress)
            let extracted = scratch.url("out")
            try FileManager.default.createDirectory(at: extracted, withIntermediateDirectories: true)
            try await ArchiveReader.open(path: archive.path(percentEncoded: false)).extract(to: extracted.path(percentEncoded: false))
            let seen = try read("seen.txt", in: extracted).split(separator: "/").map(String.init)
            try #require(seen.count == 3)
            let fraction = try #require(Double(seen[2]))
            #expect(seen[1] == "100", "the caller's total is kept")
            // 1 to 3 MiB of a 6 MiB estimate stored and written: the child is a sixth to half
            // done, and so are the 60 units it stands for.
            #expect(fraction >= 0.4 + 0.6 / 6 && fraction <= 0.4 + 0.6 / 2, "of a 6 MiB estimate, 3 MiB stored: \(seen)")
            #expect(progress.completedUnitCount == 100)
            #expect(progress.fractionCompleted == 1)
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
