import AppMigration
import Dispatch
import Foundation
import IndexedArchive
import Testing

/// The host's rule for an import's signs of life (see `ResourcesImporting`): an importer is stuck,
/// and stopped, only when for a whole stall timeout it neither advanced its progress nor used CPU
/// time. Here the stall timeout is 2 s, and the healthy importers work silently for three of them.
@Suite struct ImportSignOfLifeTests {
    static let system: MigrationSystem = {
        let policy = WatchdogPolicy(
            defaultStallTimeout: .seconds(2), gracePeriod: .seconds(2),
            checkInterval: .milliseconds(20))
        return MigrationSystem(importWatchdogPolicy: policy, compressionPreset: 0, chunkSize: 1 << 20, workers: 2)
    }()

    /// How long the silent importers work: three stall timeouts.
    static let work: Duration = .seconds(6)

    /// Computes for `work` and reports nothing, through a progress made anew at each read (the
    /// reference's pattern), so the host cannot follow it.
    struct ComputingSilentImporter: ResourcesImporting {
        var resourcesImportProgress: Progress { Progress(totalUnitCount: 100) }

        func importResources(at url: URL, request: ResourcesImportRequest) async throws {
            let end = ContinuousClock.now + ImportSignOfLifeTests.work
            var state: UInt64 = 0x9E37_79B9_7F4A_7C15
            while ContinuousClock.now < end {
                for _ in 0..<100_000 { state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407 }
                try Task.checkCancellation()
            }
            try Data(String(state).utf8).write(to: appContainer.documentsDirectory.appending(path: "computed.txt"))
        }
    }

    /// Writes a file for `work`, in small pieces, and reports nothing (its stored progress stays
    /// at zero).
    struct CopyingSilentImporter: ResourcesImporting {
        let resourcesImportProgress = Progress(totalUnitCount: 100)

        func importResources(at url: URL, request: ResourcesImportRequest) async throws {
            let target = appContainer.documentsDirectory.appending(path: "copied.bin")
            try Data().write(to: target)
            let handle = try FileHandle(forWritingTo: target)
            defer { try? handle.close() }
            let piece = Data(repeating: 0x5A, count: 64 << 10)
            let end = ContinuousClock.now + ImportSignOfLifeTests.work
            var pieces = 0
            while ContinuousClock.now < end {
                try handle.write(contentsOf: piece)
                pieces += 1
                // Keep the file small: rewrite it from the start every 16 MiB.
                if pieces % 256 == 0 { try handle.truncate(atOffset: 0) }
                try Task.checkCancellation()
            }
        }
    }

    /// Reports once, then blocks its thread (a lock that is never released, say) far longer than
    /// the stall timeout and the grace period together.
    struct BlockedImporter: ResourcesImporting {
        let resourcesImportProgress = Progress(totalUnitCount: 100)

        func importResources(at url: URL, request: ResourcesImportRequest) async throws {
            resourcesImportProgress.completedUnitCount = 10
            try Data("half".utf8).write(to: appContainer.documentsDirectory.appending(path: "half.txt"))
            _ = DispatchSemaphore(value: 0).wait(timeout: .now() + 30)
            try Task.checkCancellation()
        }
    }

    /// Exports under the same 2 s stall timeout.
    static let exportSystem: MigrationSystem = {
        let policy = WatchdogPolicy(defaultStallTimeout: .seconds(2), gracePeriod: .seconds(2), checkInterval: .milliseconds(20))
        return MigrationSystem(watchdogPolicy: policy, compressionPreset: 0, chunkSize: 1 << 20, workers: 2)
    }()

    /// An exporter whose size estimate computes for `work` (Apple's walks the container), or
    /// blocks as long.
    struct SlowEstimateExporter: ResourcesExporting {
        var blocks = false
        init() {}
        init(blocks: Bool) { self.blocks = blocks }
        var resourcesSizeEstimate: Int {
            get async {
                if blocks {
                    _ = DispatchSemaphore(value: 0).wait(timeout: .now() + .seconds(Int(ImportSignOfLifeTests.work.components.seconds)))
                    return 1
                }
                let end = ContinuousClock.now + ImportSignOfLifeTests.work
                var state: UInt64 = 1
                while ContinuousClock.now < end {
                    for _ in 0..<100_000 { state = state &* 6_364_136_223_846_793_005 &+ 1 }
                }
                return 1 + Int(state & 1)
            }
        }
        var resourcesVersion: String { "1" }
        var resourcesCompressible: Bool { true }
        func exportResources(to archiver: sending ResourcesArchiver, request: MigrationRequest) async throws {
            try await archiver.appendItem(at: appContainer.documentsDirectory)
        }
    }

    /// The size estimate is judged by the import's rule: one that computes for three stall
    /// timeouts was stopped as stalled before `exportResources` was called; one that blocks as
    /// long still is.
    @Test(arguments: [false, true])
    func aSizeEstimateIsAliveWhileItComputes(blocks: Bool) async throws {
        try await Scratch.with { scratch in
            let source = try scratch.container("source")
            try write("kept", to: "a.txt", in: source.documentsDirectory)
            let archive = scratch.url("estimate.tar.xz")
            let attempt = {
                try await Self.exportSystem.exportResources(
                    of: SlowEstimateExporter(blocks: blocks), from: source, request: MigrationRequest(destinationPlatform: .current),
                    to: archive)
            }
            if blocks {
                let error = await #expect(throws: AppMigrationError.self) { _ = try await attempt() }
                #expect(error?.code == .terminated || error?.code == .stalled, "\(String(describing: error))")
                #expect(error?.message.contains("stage 'extension'") == true, "\(String(describing: error))")
                #expect(!FileManager.default.fileExists(atPath: archive.path(percentEncoded: false)))
            } else {
                _ = try await attempt()
                #expect(
                    try await ArchiveReader(path: archive.path(percentEncoded: false)).entries().contains { $0.path == "Documents/a.txt" })
            }
        }
    }

    @Test func anImporterThatComputesWithoutReportingSucceeds() async throws {
        try await Scratch.with { scratch in
            let archive = try await exportSampleArchive(of: MyMigration(), in: scratch)
            let destination = try scratch.container("destination")
            let start = ContinuousClock.now
            try await Self.system.importResources(from: archive, into: destination, using: ComputingSilentImporter())
            #expect(ContinuousClock.now - start >= Self.work, "it worked past the stall timeout")
            #expect(exists("computed.txt", in: destination.documentsDirectory))
            expectSuccessStatus(in: destination)
        }
    }

    @Test func anImporterThatWritesWithoutReportingSucceeds() async throws {
        try await Scratch.with { scratch in
            let archive = try await exportSampleArchive(of: MyMigration(), in: scratch)
            let destination = try scratch.container("destination")
            try await Self.system.importResources(from: archive, into: destination, using: CopyingSilentImporter())
            #expect(exists("copied.bin", in: destination.documentsDirectory))
            expectSuccessStatus(in: destination)
        }
    }

    @Test func anImporterBlockedWithoutProgressIsStoppedAndTheContainerCleared() async throws {
        try await Scratch.with { scratch in
            let archive = try await exportSampleArchive(of: MyMigration(), in: scratch)
            let destination = try scratch.container("destination")
            try write("before", to: "old.txt", in: destination.documentsDirectory)
            let start = ContinuousClock.now
            let error = await #expect(throws: AppMigrationError.self) {
                try await Self.system.importResources(from: archive, into: destination, using: BlockedImporter())
            }
            // Blocked, it cannot stop when cancelled: the host gives up after the grace period.
            #expect(error?.code == .terminated, "\(String(describing: error))")
            #expect(
                error?.message.contains("stage 'extension' made no progress") == true, "the stall is named: \(String(describing: error))")
            #expect(ContinuousClock.now - start < .seconds(25), "stopped long before the importer's wait ends")
            #expect(!exists("half.txt", in: destination.documentsDirectory), "the container is cleared")
            #expect(!exists("old.txt", in: destination.documentsDirectory))
            let status = MigrationDataContainer.withCurrent(destination) { MigrationStatus.importStatus }
            guard case .failure(let recorded)? = status else {
                Issue.record("expected failure, got \(String(describing: status))")
                return
            }
            #expect((recorded as NSError).domain == (AppMigrationError(.terminated, "") as NSError).domain)
        }
    }
}
