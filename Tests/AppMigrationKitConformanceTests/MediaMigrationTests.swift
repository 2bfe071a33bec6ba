// Written for iOS from Apple's AppMigrationKit reference pages alone; lines marked "registration"
// are the only ones the iOS test target would not hold.
import AppMigrationKit
import AppMigrationTesting  // registration
import Foundation
import Testing

@Suite(.appMigrationExtension(MediaMigration()))  // registration
struct MediaMigrationTests {
    func writeMedia() throws {
        let media = MediaMigration().appContainer.documentsDirectory.appending(path: "Media")
        for (folder, name) in [("photos", "beach.heic"), ("videos", "surf.mov")] {
            try FileManager.default.createDirectory(at: media.appending(path: folder), withIntermediateDirectories: true)
            try Data((0..<2048).map { UInt8(truncatingIfNeeded: $0 &* 37) }).write(to: media.appending(path: "\(folder)/\(name)"))
        }
    }

    func text(at url: URL) throws -> String {
        String(decoding: try Data(contentsOf: url), as: UTF8.self)
    }

    func exists(_ url: URL) -> Bool {
        FileManager.default.fileExists(atPath: url.path(percentEncoded: false))
    }

    @Test func theExtensionReceivesTheRequestedOptionsWithTheirPayloads() async throws {
        try writeMedia()
        let tester = try await AppMigrationTester(platform: .android)
        let request = MigrationRequestWithOptions<MediaMigration.MediaOption>(
            destinationPlatform: .android, options: [.photos: Data("originals".utf8)])
        #expect(request.options[.photos] == Data("originals".utf8))
        #expect(request.options[.videos] == nil)

        let result = try await tester.exportController.exportResources(request: request, progress: nil)
        let extracted = result.extractedResourcesURL
        #expect(exists(extracted.appending(path: "photos/beach.heic")))
        #expect(!exists(extracted.appending(path: "videos")), "not requested")
        #expect(try text(at: extracted.appending(path: "request.txt")) == "android:photos=originals")
    }

    @Test func incompressibleResourcesReportNoCompressedSize() async throws {
        try writeMedia()
        let tester = try await AppMigrationTester(platform: .android)
        let all = MigrationRequestWithOptions<MediaMigration.MediaOption>(
            destinationPlatform: .android, options: [.photos: Data(), .videos: Data()])
        let result = try await tester.exportController.exportResources(request: all)
        #expect(result.exportProperties.compressedBytes == nil)
        #expect(result.exportProperties.uncompressedBytes >= 4096)
        #expect(result.exportProperties.sizeEstimate == 1 << 20)
        #expect(result.exportProperties.version == "media-1")
    }

    @Test func aRequestWithoutOptionsAsksForNothing() async throws {
        try writeMedia()
        let tester = try await AppMigrationTester(platform: .android)
        let result = try await tester.exportController.exportResources(
            request: MigrationRequest(
                destinationPlatform: .android,
                options: [:]))
        #expect(try text(at: result.extractedResourcesURL.appending(path: "request.txt")) == "android:")
        #expect(!exists(result.extractedResourcesURL.appending(path: "photos")))
    }
}

@Suite(.appMigrationExtension(RejectingImporter()))  // registration
struct RejectingImporterTests {
    @Test func theImportersErrorKeepsItsDomainAndCodeThroughTheStatus() async throws {
        let received = FileManager.default.temporaryDirectory.appending(path: "received-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: received, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: received) }
        try Data("v99".utf8).write(to: received.appending(path: "notes.db"))

        let tester = try await AppMigrationTester(platform: .android)
        let importer = try await tester.importController
        var thrown: (any Error)?
        do {
            try await importer.importResources(from: received)
        } catch {
            thrown = error
        }
        let error = try #require(thrown)
        #expect((error as NSError).domain == RejectingImporter.errorDomain)
        #expect((error as NSError).code == RejectingImporter.errorCode)

        try await importer.registerImportCompletion(with: .failure(error))
        guard case .failure(let recorded)? = MigrationStatus.importStatus else {
            Issue.record("expected a failure, got \(String(describing: MigrationStatus.importStatus))")
            return
        }
        #expect((recorded as NSError).domain == RejectingImporter.errorDomain)
        #expect((recorded as NSError).code == RejectingImporter.errorCode)
        #expect(recorded.localizedDescription == "The notes were written by a newer app.")
        MigrationStatus.clearImportStatus()
        #expect(MigrationStatus.importStatus == nil)
    }
}

@Suite(.appMigrationExtension(QuietImporter()))  // registration
struct QuietImporterTests {
    @Test func anImporterWhoseProgressCannotBeFollowedStillImports() async throws {
        let received = FileManager.default.temporaryDirectory.appending(path: "received-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: received, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: received) }
        try Data("hello".utf8).write(to: received.appending(path: "greeting.txt"))

        let tester = try await AppMigrationTester(platform: .android)
        let progress = Progress(totalUnitCount: 100)
        try await tester.importController.importResources(from: received, importRequest: nil, progress: progress)
        #expect(progress.completedUnitCount == 100)
        let copied = QuietImporter().appContainer.documentsDirectory.appending(path: "quiet-greeting.txt")
        #expect(String(decoding: try Data(contentsOf: copied), as: UTF8.self) == "hello")
    }
}
