// Written from Apple's AppMigrationKit skill text: an app whose shared data lives in an app group
// exports it, and its import clears the group before writing it back (a failed import clears the
// app's container, not its groups). The lines that are not what the iOS target would hold are
// marked "registration".
import AppMigrationKit
import AppMigrationTesting  // registration
import Foundation
import Testing

/// Exports the group's `shared_data` folder and the app's documents; imports both back, the group
/// cleared first.
struct AppGroupMigration: ResourcesExporting, ResourcesImporting {
    static let group = "group.com.example.notes"

    var resourcesSizeEstimate: Int { 1 << 20 }
    var resourcesVersion: String { "2" }
    var resourcesCompressible: Bool { true }
    let resourcesImportProgress = Progress(totalUnitCount: 1)

    func exportResources(to archiver: sending ResourcesArchiver, request: MigrationRequest) async throws {
        try await archiver.appendItem(at: appContainer.documentsDirectory, pathInArchive: "documents")
        if let groupURL = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: Self.group) {
            try await archiver.appendItem(at: groupURL.appending(path: "shared_data"), pathInArchive: "group/shared_data")
        }
    }

    func importResources(at importedDataURL: URL, request: ResourcesImportRequest) async throws {
        let manager = FileManager.default
        if let groupURL = manager.containerURL(forSecurityApplicationGroupIdentifier: Self.group) {
            try? manager.removeItem(at: groupURL.appending(path: "shared_data"))
            try manager.copyItem(
                at: importedDataURL.appending(path: "group/shared_data"), to: groupURL.appending(path: "shared_data"))
        }
        for name in try manager.contentsOfDirectory(atPath: importedDataURL.appending(path: "documents").path(percentEncoded: false)) {
            let target = appContainer.documentsDirectory.appending(path: name)
            try? manager.removeItem(at: target)
            try manager.copyItem(at: importedDataURL.appending(path: "documents/\(name)"), to: target)
        }
        resourcesImportProgress.completedUnitCount = 1
    }
}

/// Appends the app's documents from several child tasks at once: the `sending` parameter bound
/// to a plain constant first, as the README says (captured directly, Swift refuses it).
struct ParallelExport: ResourcesExporting {
    var resourcesSizeEstimate: Int { 1 << 20 }
    var resourcesVersion: String { "1" }
    var resourcesCompressible: Bool { true }

    func exportResources(to archiver: sending ResourcesArchiver, request: MigrationRequest) async throws {
        let archiver: ResourcesArchiver = archiver
        let documents = appContainer.documentsDirectory
        let names = try FileManager.default.contentsOfDirectory(atPath: documents.path(percentEncoded: false))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for name in names {
                group.addTask { try await archiver.appendItem(at: documents.appending(path: name), pathInArchive: "docs/\(name)") }
            }
            try await group.waitForAll()
        }
    }
}

@Suite(.appMigrationExtension(ParallelExport()))  // registration
struct ParallelExportTests {
    @Test func appendsFromChildTasksAllArrive() async throws {
        let documents = ParallelExport().appContainer.documentsDirectory
        for index in 0..<20 { try Data("note \(index)".utf8).write(to: documents.appending(path: "n\(index).txt")) }
        let exported = try await AppMigrationTester(platform: .android).exportController.exportResources()
        let names = try FileManager.default.contentsOfDirectory(
            atPath: exported.extractedResourcesURL.appending(path: "docs").path(percentEncoded: false))
        #expect(Set(names) == Set((0..<20).map { "n\($0).txt" }))
    }
}

@Suite(.appMigrationExtension(AppGroupMigration(), appGroups: [AppGroupMigration.group]))  // registration
struct AppGroupMigrationTests {
    /// The group's data travels in the archive, and the import replaces what the group held.
    @Test func theAppGroupsDataIsExportedAndImportedBack() async throws {
        let manager = FileManager.default
        let groupURL = try #require(manager.containerURL(forSecurityApplicationGroupIdentifier: AppGroupMigration.group))
        let shared = groupURL.appending(path: "shared_data")
        try manager.createDirectory(at: shared, withIntermediateDirectories: true)
        try Data("widget state".utf8).write(to: shared.appending(path: "widget.json"))
        try Data("a note".utf8).write(to: AppGroupMigration().appContainer.documentsDirectory.appending(path: "note.txt"))

        let tester = try await AppMigrationTester(platform: .android)
        let exported = try await tester.exportController.exportResources()
        let archived = exported.extractedResourcesURL.appending(path: "group/shared_data/widget.json")
        #expect(String(decoding: try Data(contentsOf: archived), as: UTF8.self) == "widget state")

        // Stale data in the group: the import clears it before writing.
        try Data("stale".utf8).write(to: shared.appending(path: "stale.json"))
        let importer = try await tester.importController
        try await importer.importResources(from: exported.extractedResourcesURL)
        try await importer.registerImportCompletion(with: .success)
        #expect(try manager.contentsOfDirectory(atPath: shared.path(percentEncoded: false)) == ["widget.json"])
        guard case .success? = MigrationStatus.importStatus else {
            Issue.record("expected success, got \(String(describing: MigrationStatus.importStatus))")
            return
        }
    }

    /// A group the app does not belong to is no container.
    @Test func anotherGroupIsNotTheApps() {
        #expect(FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: "group.com.example.other") == nil)
    }
}
