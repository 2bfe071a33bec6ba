import AppMigration
import Foundation
import IndexedArchive
import Testing

@Suite struct MigrationSystemTests {
    /// Exports Documents and Application Support, with a version and estimate of its choosing.
    struct DocumentsExporter: ResourcesExporting {
        var compressible = true
        var resourcesSizeEstimate: Int { get async { 123_456 } }
        var resourcesVersion: String { "4.2" }
        var resourcesCompressible: Bool { compressible }
        func exportResources(to archiver: sending ResourcesArchiver, request: MigrationRequest) async throws {
            try await archiver.appendItem(at: appContainer.documentsDirectory)
            try await archiver.appendItem(at: appContainer.applicationSupportDirectory)
        }
    }

    /// Records the request it is given; optionally waits at a gate first.
    struct RecordingImporter: ResourcesImporting {
        let seen: Box<ResourcesImportRequest?>
        var gate: Gate? = nil
        var started: Box<Bool>? = nil
        func importResources(at url: URL, request: ResourcesImportRequest) async throws {
            seen.current = request
            started?.current = true
            if let gate {
                // Waits for the test without holding a thread, beating via progress.
                while true {
                    if try await eventually(timeout: .milliseconds(100), { gate.isOpenNow }) { break }
                    resourcesImportProgress.completedUnitCount += 1
                }
            }
        }
    }

    func exportSample(in scratch: Scratch, exporter: DocumentsExporter = DocumentsExporter(),
                      sourceApp: MigrationAppIdentifier? = nil) async throws -> (URL, DeviceToDeviceExportProperties) {
        let source = try scratch.container("source-\(UUID().uuidString)", bundleIdentifier: "com.example.source")
        try SampleData.seed(source)
        let archive = scratch.url("\(UUID().uuidString).tar.xz")
        let properties = try await quickSystem.exportResources(of: exporter, from: source,
                                                               request: MigrationRequest(destinationPlatform: MigrationPlatform("windows")),
                                                               to: archive, sourceApp: sourceApp)
        return (archive, properties)
    }

    @Test func exportRecordsItsMetadataInTheArchive() async throws {
        try await Scratch.with { scratch in
            let sourceApp = MigrationAppIdentifier(storeIdentifier: .googlePlay, bundleIdentifier: "com.example.android",
                                                   platform: .android)
            let (archive, properties) = try await exportSample(in: scratch, sourceApp: sourceApp)
            let metadata = try await ArchiveReader(path: archive.path(percentEncoded: false)).metadata()
            #expect(metadata["resourcesVersion"] == "4.2")
            #expect(metadata["sizeEstimate"] == "123456")
            #expect(metadata["sourceBundleIdentifier"] == "com.example.android")
            #expect(metadata["sourcePlatform"] == "android")
            #expect(metadata["sourceStoreIdentifier"] == "googlePlay")
            #expect(metadata["destinationPlatform"] == "windows")
            #expect(metadata["extension"] == "DocumentsExporter")
            #expect(properties.sizeEstimate == 123_456)
            #expect(properties.version == "4.2")
            let archiveSize = try #require(try FileManager.default.attributesOfItem(atPath: archive.path(percentEncoded: false))[.size] as? Int)
            #expect(properties.compressedBytes == archiveSize)
            #expect(properties.uncompressedBytes > archiveSize, "sample data compresses")
        }
    }

    @Test func incompressibleResourcesAreStoredAndReportNoCompressedSize() async throws {
        try await Scratch.with { scratch in
            let (archive, properties) = try await exportSample(in: scratch, exporter: DocumentsExporter(compressible: false))
            #expect(properties.compressedBytes == nil)
            let archiveSize = try #require(try FileManager.default.attributesOfItem(atPath: archive.path(percentEncoded: false))[.size] as? Int)
            // Stored blocks hold the tar stream as it is, so the file is no smaller than it.
            #expect(archiveSize >= properties.uncompressedBytes)
            try await ArchiveReader(path: archive.path(percentEncoded: false)).verify()
        }
    }

    @Test func importPassesSourceVersionAndSourceAppFromTheArchive() async throws {
        try await Scratch.with { scratch in
            let sourceApp = MigrationAppIdentifier(storeIdentifier: .googlePlay, bundleIdentifier: "com.example.android",
                                                   platform: .android)
            let (archive, _) = try await exportSample(in: scratch, sourceApp: sourceApp)
            let seen = Box<ResourcesImportRequest?>(nil)
            let destination = try scratch.container("destination")
            try await quickSystem.importResources(from: archive, into: destination, using: RecordingImporter(seen: seen))
            #expect(seen.current == ResourcesImportRequest(sourceAppIdentifier: sourceApp, sourceVersion: "4.2"))
        }
    }

    @Test func exportWithoutSourceAppRecordsTheContainersApp() async throws {
        try await Scratch.with { scratch in
            let (archive, _) = try await exportSample(in: scratch)
            let seen = Box<ResourcesImportRequest?>(nil)
            let destination = try scratch.container("destination")
            try await quickSystem.importResources(from: archive, into: destination, using: RecordingImporter(seen: seen))
            let source = try #require(seen.current?.sourceAppIdentifier)
            #expect(source.bundleIdentifier == "com.example.source")
            #expect(source.platform == .current)
            #expect(source.storeIdentifier == .unknown)
        }
    }

    @Test func importIsRefusedWithoutEnoughSpaceAndTheContainerIsLeftAlone() async throws {
        try await Scratch.with { scratch in
            let (archive, _) = try await exportSample(in: scratch)
            var system = quickSystem
            system.freeBytes = { _ in 4096 }
            let seen = Box<ResourcesImportRequest?>(nil)
            let destination = try scratch.container("destination")
            try write("mine", to: "keep.txt", in: destination.documentsDirectory)
            let error = await #expect(throws: AppMigrationError.self) {
                try await system.importResources(from: archive, into: destination, using: RecordingImporter(seen: seen))
            }
            guard case .insufficientSpace(let needed, let available)? = error?.code else {
                Issue.record("expected insufficientSpace, got \(String(describing: error))")
                return
            }
            #expect(available == 4096)
            let content = try await ArchiveReader(path: archive.path(percentEncoded: false)).entries().reduce(0) { $0 + $1.size }
            #expect(needed > 2 * content, "room for the staged copy and the import")
            #expect(error?.message.contains("\(needed) bytes needed, 4096 available") == true)
            #expect(seen.current == nil, "the extension never ran")
            #expect(try read("keep.txt", in: destination.documentsDirectory) == "mine")
        }
    }

    @Test func statvfsMeasuresRealFreeSpace() throws {
        let free = try MigrationSystem().freeBytes(FileManager.default.temporaryDirectory.path(percentEncoded: false))
        #expect(free > 0)
        #expect(throws: AppMigrationError.self) { try MigrationSystem().freeBytes("/no/such/dir/\(UUID().uuidString)") }
    }

    @Test func theLockIsVisibleAndRefusesASecondMigration() async throws {
        try await Scratch.with { scratch in
            let (archive, _) = try await exportSample(in: scratch)
            let destination = try scratch.container("destination")
            #expect(!MigrationSystem.isMigrationInProgress(container: destination))
            let gate = Gate()
            defer { gate.open() }
            let started = Box(false)
            let seen = Box<ResourcesImportRequest?>(nil)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    try await quickSystem.importResources(from: archive, into: destination,
                                                          using: RecordingImporter(seen: seen, gate: gate, started: started))
                }
                #expect(try await eventually { started.current })
                #expect(MigrationSystem.isMigrationInProgress(container: destination))
                let second = await #expect(throws: AppMigrationError.self) {
                    try await quickSystem.importResources(from: archive, into: destination,
                                                          using: RecordingImporter(seen: Box(nil)))
                }
                #expect(second?.code == .migrationInProgress)
                let export = await #expect(throws: AppMigrationError.self) {
                    try await quickSystem.exportResources(of: DocumentsExporter(), from: destination,
                                                          request: MigrationRequest(destinationPlatform: .android),
                                                          to: scratch.url("second.tar.xz"))
                }
                #expect(export?.code == .migrationInProgress)
                gate.open()
                try await group.waitForAll()
            }
            #expect(!MigrationSystem.isMigrationInProgress(container: destination))
        }
    }

    @Test func callerCancellationEndsTheExportAndLeavesNothing() async throws {
        try await Scratch.with { scratch in
            let container = try scratch.container("app")
            try SampleData.seed(container)
            let archive = scratch.url("cancelled.tar.xz")
            struct Slow: ResourcesExporting {
                var resourcesSizeEstimate: Int { 0 }
                var resourcesVersion: String { "1" }
                var resourcesCompressible: Bool { true }
                func exportResources(to archiver: sending ResourcesArchiver, request: MigrationRequest) async throws {
                    try await archiver.appendItem(at: appContainer.documentsDirectory)
                    try await Task.sleep(for: .seconds(30))
                }
            }
            let task = Task {
                try await quickSystem.exportResources(of: Slow(), from: container,
                                                      request: MigrationRequest(destinationPlatform: .android), to: archive)
            }
            try await Task.sleep(for: .milliseconds(200))
            task.cancel()
            let result = await task.result
            #expect(throws: CancellationError.self) { try result.get() }
            #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.root.path(percentEncoded: false)) == ["app"])
        }
    }

    @Test func unreadableArchiveIsATypedErrorAndTheContainerStays() async throws {
        try await Scratch.with { scratch in
            let archive = try write("not an archive at all", to: "bogus.tar.xz", in: scratch.root)
            let destination = try scratch.container("destination")
            try write("mine", to: "keep.txt", in: destination.documentsDirectory)
            let error = await #expect(throws: AppMigrationError.self) {
                try await quickSystem.importResources(from: archive, into: destination, using: RecordingImporter(seen: Box(nil)))
            }
            #expect(error?.code == .unreadableArchive)
            #expect(try read("keep.txt", in: destination.documentsDirectory) == "mine")
        }
    }
}
