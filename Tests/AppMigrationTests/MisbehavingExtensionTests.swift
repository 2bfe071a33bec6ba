import AppMigration
import Foundation
import Testing

/// Extensions that misbehave in each way the system guards against, run through the host with a
/// short watchdog policy (300 ms stall timeout, 300 ms grace).
@Suite struct MisbehavingExtensionTests {
    struct Staller: ResourcesExporting {
        var resourcesSizeEstimate: Int { 0 }
        var resourcesVersion: String { "1" }
        var resourcesCompressible: Bool { true }
        func exportResources(to archiver: sending ResourcesArchiver, request: MigrationRequest) async throws {
            // Never appends, and never beats: the watchdog cancels it after the stall timeout.
            try await Task.sleep(for: .seconds(30))
        }
    }

    /// Exports with `fastSystem` and returns the error, how long the answer took, and the archive URL.
    func failingExport<E: ResourcesExportingWithOptions>(_ exporter: E, in scratch: Scratch,
                                                         seed: (MigrationDataContainer) throws -> Void = SampleData.seed)
        async throws -> (error: (any Error)?, elapsed: Duration, archive: URL) {
        let container = try scratch.container("app")
        try seed(container)
        let archive = scratch.url("out/export.tar.xz")
        try FileManager.default.createDirectory(at: archive.deletingLastPathComponent(), withIntermediateDirectories: true)
        let start = ContinuousClock.now
        var caught: (any Error)?
        do {
            try await fastSystem.exportResources(of: exporter, from: container, request: MigrationRequestWithOptions(destinationPlatform: .android),
                                                 to: archive)
        } catch {
            caught = error
        }
        return (caught, ContinuousClock.now - start, archive)
    }

    @Test func stallingExtensionIsCancelledAndNamed() async throws {
        try await Scratch.with { scratch in
            let (error, elapsed, archive) = try await failingExport(Staller(), in: scratch)
            let failure = try #require(error as? AppMigrationError, "got \(String(describing: error))")
            #expect(failure.code == .stalled)
            #expect(failure.extensionName == "Staller")
            #expect(failure.description.contains("extension 'Staller'"), "\(failure)")
            #expect(failure.description.contains("stage 'extension'"), "\(failure)")
            #expect(elapsed >= .milliseconds(300))
            #expect(elapsed < .seconds(3), "answered after \(elapsed)")
            #expect(!FileManager.default.fileExists(atPath: archive.path(percentEncoded: false)))
        }
    }

    struct Swallower: ResourcesExporting {
        let appendsAfterCancellation: Box<Int>
        var resourcesSizeEstimate: Int { 0 }
        var resourcesVersion: String { "1" }
        var resourcesCompressible: Bool { true }
        func exportResources(to archiver: sending ResourcesArchiver, request: MigrationRequest) async throws {
            let docs = appContainer.documentsDirectory
            for name in ["profile.json", "user_data.json", "core_data.json", "settings.plist"] {
                do {
                    try await archiver.appendItem(at: docs.appending(path: name))
                } catch is CancellationError {
                    // WRONG, as the skill says: swallowing the cancellation and carrying on.
                    appendsAfterCancellation.current += 1
                }
                // Slow work between appends that ignores cancellation.
                await waitIgnoringCancellation(.milliseconds(400))
            }
        }
    }

    @Test func extensionThatSwallowsCancellationIsTerminated() async throws {
        try await Scratch.with { scratch in
            let swallowed = Box(0)
            let (error, elapsed, archive) = try await failingExport(Swallower(appendsAfterCancellation: swallowed), in: scratch)
            let failure = try #require(error as? AppMigrationError, "got \(String(describing: error))")
            #expect(failure.code == .terminated)
            #expect(failure.description.contains("cancellation ignored"), "\(failure)")
            #expect(elapsed < .seconds(3), "answered after \(elapsed)")
            #expect(!FileManager.default.fileExists(atPath: archive.path(percentEncoded: false)))
            // It did carry on after the cancellation: at least one append threw and was swallowed.
            #expect(try await eventually { swallowed.current >= 1 })
        }
    }

    struct ReturnsAfterCancellation: ResourcesExporting {
        var resourcesSizeEstimate: Int { 0 }
        var resourcesVersion: String { "1" }
        var resourcesCompressible: Bool { true }
        func exportResources(to archiver: sending ResourcesArchiver, request: MigrationRequest) async throws {
            try await archiver.appendItem(at: appContainer.documentsDirectory.appending(path: "profile.json"))
            // Waits, and when cancelled returns as if all went well.
            try? await Task.sleep(for: .seconds(30))
        }
    }

    @Test func extensionThatReturnsNormallyAfterCancellationIsTerminated() async throws {
        try await Scratch.with { scratch in
            let (error, elapsed, archive) = try await failingExport(ReturnsAfterCancellation(), in: scratch)
            let failure = try #require(error as? AppMigrationError, "got \(String(describing: error))")
            #expect(failure.code == .terminated)
            #expect(failure.description.contains("cancellation ignored"), "\(failure)")
            #expect(failure.description.contains("returned"), "\(failure)")
            #expect(elapsed < .seconds(3))
            // The export was called off: the half-made archive is not delivered.
            #expect(!FileManager.default.fileExists(atPath: archive.path(percentEncoded: false)))
        }
    }

    struct ThreadBlocker: ResourcesExporting {
        let gate: Gate
        var resourcesSizeEstimate: Int { 0 }
        var resourcesVersion: String { "1" }
        var resourcesCompressible: Bool { true }
        func exportResources(to archiver: sending ResourcesArchiver, request: MigrationRequest) async throws {
            try await archiver.appendItem(at: appContainer.documentsDirectory.appending(path: "profile.json"))
            // Holds its thread, as a read stuck in the kernel would; cancellation cannot reach it.
            gate.blockThread()
        }
    }

    @Test func extensionThatBlocksItsThreadStillGetsTheCallerAnAnswerOnTime() async throws {
        try await Scratch.with { scratch in
            let gate = Gate()
            // Released however the test ends, so the blocked thread returns to the pool.
            defer { gate.open() }
            let (error, elapsed, archive) = try await failingExport(ThreadBlocker(gate: gate), in: scratch)
            let failure = try #require(error as? AppMigrationError, "got \(String(describing: error))")
            #expect(failure.code == .terminated)
            #expect(failure.description.contains("did not stop"), "\(failure)")
            // Stall (300 ms) + grace (300 ms) + checks; far less than "never".
            #expect(elapsed < .seconds(2), "answered after \(elapsed)")
            #expect(!FileManager.default.fileExists(atPath: archive.path(percentEncoded: false)))
            gate.open()
            // Once the abandoned export unwinds, its temporary file beside the destination goes too.
            let folder = archive.deletingLastPathComponent().path(percentEncoded: false)
            #expect(try await eventually { ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? ["?"]).isEmpty })
        }
    }

    struct Escaper: ResourcesExporting {
        let target: URL
        var resourcesSizeEstimate: Int { 0 }
        var resourcesVersion: String { "1" }
        var resourcesCompressible: Bool { true }
        func exportResources(to archiver: sending ResourcesArchiver, request: MigrationRequest) async throws {
            try await archiver.appendItem(at: appContainer.documentsDirectory.appending(path: "profile.json"))
            try await archiver.appendItem(at: target, pathInArchive: "loot")
        }
    }

    @Test(arguments: ["outside/secret.txt", "app/Documents/../../outside/secret.txt", "app/Documents/link/secret.txt",
                      "app2/secret.txt"])
    func extensionAppendingOutsideItsContainerIsRefused(path: String) async throws {
        try await Scratch.with { scratch in
            try write("secret", to: "outside/secret.txt", in: scratch.root)
            try write("secret", to: "app2/secret.txt", in: scratch.root)
            let target = scratch.url(path)
            let (error, _, archive) = try await failingExport(Escaper(target: target), in: scratch) { container in
                try SampleData.seed(container)
                try FileManager.default.createSymbolicLink(atPath: container.documentsDirectory.appending(path: "link").path(percentEncoded: false),
                                                           withDestinationPath: "../../outside")
            }
            let failure = try #require(error as? AppMigrationError, "got \(String(describing: error))")
            #expect(failure.code == .outsideContainer)
            #expect(failure.description.contains("outside the extension's container"), "\(failure)")
            #expect(!FileManager.default.fileExists(atPath: archive.path(percentEncoded: false)))
        }
    }

    struct FailingExporter: ResourcesExporting {
        struct Broken: Error, Equatable {}
        var resourcesSizeEstimate: Int { 0 }
        var resourcesVersion: String { "1" }
        var resourcesCompressible: Bool { true }
        func exportResources(to archiver: sending ResourcesArchiver, request: MigrationRequest) async throws {
            try await archiver.appendItem(at: appContainer.documentsDirectory)
            throw Broken()
        }
    }

    @Test func extensionThatThrowsFailsTheExportAndLeavesNothing() async throws {
        try await Scratch.with { scratch in
            let (error, _, archive) = try await failingExport(FailingExporter(), in: scratch)
            #expect(error as? FailingExporter.Broken == FailingExporter.Broken(), "the extension's own error: \(String(describing: error))")
            let folder = archive.deletingLastPathComponent().path(percentEncoded: false)
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder).isEmpty, "no archive, no temporary file")
        }
    }

    struct FailingImporter: ResourcesImporting {
        struct Broken: Error {}
        func importResources(at url: URL, request: ResourcesImportRequest) async throws {
            let docs = appContainer.documentsDirectory
            try FileManager.default.copyItem(at: url.appending(path: "user/profile.json"), to: docs.appending(path: "profile.json"))
            let group = try #require(FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: "group.com.example.myapp"))
            try Data("half".utf8).write(to: group.appending(path: "imported-by-extension"))
            resourcesImportProgress.completedUnitCount = 50
            throw Broken()
        }
    }

    @Test func importThatThrowsMidwayClearsTheContainerButNotTheAppGroup() async throws {
        try await Scratch.with { scratch in
            let source = try scratch.container("source")
            try SampleData.seed(source)
            let archive = scratch.url("a.tar.xz")
            try await quickSystem.exportResources(of: AppDataMigration(), from: source,
                                                  request: MigrationRequest(destinationPlatform: .android), to: archive)
            let destination = try scratch.container("destination")
            try write("existing", to: "old.txt", in: destination.documentsDirectory)
            try write("cache", to: "Caches/c.bin", in: destination.libraryDirectory)
            let group = try #require(destination.appGroupDirectories["group.com.example.myapp"])
            try write("shared", to: "shared.txt", in: group)

            await #expect(throws: FailingImporter.Broken.self) {
                try await fastSystem.importResources(from: archive, into: destination, using: FailingImporter())
            }
            let root = destination.containerRootDirectory
            #expect(files(under: root).allSatisfy { $0.hasPrefix(".amk/") }, "\(files(under: root))")
            #expect(!files(under: root).contains { $0.contains("staging") }, "the staging folder is removed")
            #expect(exists("Documents", in: root) && exists("Library/Application Support", in: root),
                    "the empty standard folders are back")
            #expect(try read("shared.txt", in: group) == "shared", "app-group data is untouched")
            #expect(exists("imported-by-extension", in: group), "even what the extension wrote there: its job to clear")
            let status = MigrationDataContainer.withCurrent(destination) { MigrationStatus.importStatus }
            guard case .failure(let error) = status else {
                Issue.record("expected failure, got \(String(describing: status))")
                return
            }
            #expect((error as? RecordedImportError)?.errorType.contains("Broken") == true, "\(error)")
        }
    }

    struct StallingImporter: ResourcesImporting {
        func importResources(at url: URL, request: ResourcesImportRequest) async throws {
            try await Task.sleep(for: .seconds(30))
        }
    }

    @Test func stallingImporterIsCancelledAndTheFailureRecorded() async throws {
        try await Scratch.with { scratch in
            let source = try scratch.container("source")
            try SampleData.seed(source)
            let archive = scratch.url("a.tar.xz")
            try await quickSystem.exportResources(of: MyMigration(), from: source,
                                                  request: MigrationRequest(destinationPlatform: .android), to: archive)
            let destination = try scratch.container("destination")
            let start = ContinuousClock.now
            let error = await #expect(throws: AppMigrationError.self) {
                try await fastSystem.importResources(from: archive, into: destination, using: StallingImporter())
            }
            #expect(error?.code == .stalled)
            #expect(ContinuousClock.now - start < .seconds(3))
            let status = MigrationDataContainer.withCurrent(destination) { MigrationStatus.importStatus }
            guard case .failure = status else {
                Issue.record("expected failure, got \(String(describing: status))")
                return
            }
        }
    }
}
