@testable import AppMigration
import Foundation
import Testing

@Suite struct MigrationStatusTests {
    struct Failure: Error, CustomStringConvertible {
        var description: String { "the database was locked" }
    }

    @Test func statusIsPersistedInTheContainerAndSurvivesARestart() async throws {
        try await Scratch.with { scratch in
            let container = try scratch.container("app")
            try MigrationStatus.record(.failure(Failure()), in: container)
            // A "restart": a new container value for the same folder, nothing shared in memory.
            let restarted = MigrationDataContainer(bundleIdentifier: "com.example.myapp",
                                                   containerRootDirectory: container.containerRootDirectory)
            let status = MigrationDataContainer.withCurrent(restarted) { MigrationStatus.importStatus }
            guard case .failure(let error)? = status else {
                Issue.record("expected failure, got \(String(describing: status))")
                return
            }
            let recorded = error as NSError
            #expect(recorded.userInfo[MigrationStatus.errorDescriptionUserInfoKey] as? String == "the database was locked")
            #expect((recorded.userInfo[MigrationStatus.errorTypeUserInfoKey] as? String)?
                .hasSuffix("MigrationStatusTests.Failure") == true)
            #expect(recorded.localizedDescription == "the database was locked")
            #expect(FileManager.default.fileExists(
                atPath: container.containerRootDirectory.appending(path: ".amk/import-status.json").path(percentEncoded: false)))
        }
    }

    @Test func clearImportStatusForgetsItForTheCurrentContainerOnly() async throws {
        try await Scratch.with { scratch in
            let first = try scratch.container("first")
            let second = try scratch.container("second")
            try MigrationStatus.record(.success, in: first)
            try MigrationStatus.record(.success, in: second)
            MigrationDataContainer.withCurrent(first) { MigrationStatus.clearImportStatus() }
            #expect(MigrationDataContainer.withCurrent(first) { MigrationStatus.importStatus } == nil)
            let other = MigrationDataContainer.withCurrent(second) { MigrationStatus.importStatus }
            guard case .success? = other else {
                Issue.record("the other container's status must stay, got \(String(describing: other))")
                return
            }
        }
    }

    @Test func unreadableStatusReadsAsNone() async throws {
        try await Scratch.with { scratch in
            let container = try scratch.container("app")
            try write("{ not json", to: ".amk/import-status.json", in: container.containerRootDirectory)
            #expect(MigrationDataContainer.withCurrent(container) { MigrationStatus.importStatus } == nil)
        }
    }
}
