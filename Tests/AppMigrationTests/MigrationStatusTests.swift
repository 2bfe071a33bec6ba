import Foundation
import Testing

@testable import AppMigration

@Suite struct MigrationStatusTests {
    struct Failure: Error, CustomStringConvertible {
        var description: String { "the database was locked" }
    }

    @Test func statusIsPersistedInTheContainerAndSurvivesARestart() async throws {
        try await Scratch.with { scratch in
            let container = try scratch.container("app")
            try MigrationStatus.record(.failure(Failure()), in: container)
            // A "restart": a new container value for the same folder, nothing shared in memory.
            let restarted = MigrationDataContainer(
                bundleIdentifier: "com.example.myapp",
                containerRootDirectory: container.containerRootDirectory)
            let status = MigrationDataContainer.withCurrent(restarted) { MigrationStatus.importStatus }
            guard case .failure(let error)? = status else {
                Issue.record("expected failure, got \(String(describing: status))")
                return
            }
            let recorded = error as NSError
            #expect(recorded.userInfo[MigrationStatus.errorDescriptionUserInfoKey] as? String == "the database was locked")
            #expect(
                (recorded.userInfo[MigrationStatus.errorTypeUserInfoKey] as? String)?
                    .hasSuffix("MigrationStatusTests.Failure") == true)
            #expect(recorded.localizedDescription == "the database was locked")
            #expect(
                FileManager.default.fileExists(
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

    enum ImportFailure: Error {
        case tooOld, tooNew
    }

    /// What the app reads back for an error, `NSError` or Swift, is an `NSError` with the domain
    /// and code the thrown error bridges to.
    @Test(arguments: [
        NSError(domain: "com.example.app.import", code: 42, userInfo: [NSLocalizedDescriptionKey: "Too new."]),
        ImportFailure.tooNew as NSError,
        CocoaError(.fileReadCorruptFile) as NSError
    ])
    func failureKeepsTheDomainAndCode(_ thrown: NSError) async throws {
        try await Scratch.with { scratch in
            let container = try scratch.container("app")
            try MigrationStatus.record(.failure(thrown), in: container)
            let status = MigrationDataContainer.withCurrent(container) { MigrationStatus.importStatus }
            guard case .failure(let error)? = status else {
                Issue.record("expected failure, got \(String(describing: status))")
                return
            }
            #expect((error as NSError).domain == thrown.domain)
            #expect((error as NSError).code == thrown.code)
            #expect(error.localizedDescription == thrown.localizedDescription)
            // Recorded again (an app that passes it on), it stays the same.
            try MigrationStatus.record(.failure(error), in: container)
            let again = MigrationDataContainer.withCurrent(container) { MigrationStatus.importStatus }
            guard case .failure(let repeated)? = again else {
                Issue.record("expected failure, got \(String(describing: again))")
                return
            }
            #expect((repeated as NSError).domain == thrown.domain)
            #expect((repeated as NSError).code == thrown.code)
        }
    }

    @Test func aSwiftErrorKeepsItsBridgedDomainCodeAndType() async throws {
        try await Scratch.with { scratch in
            let container = try scratch.container("app")
            try MigrationStatus.record(.failure(ImportFailure.tooNew), in: container)
            let status = MigrationDataContainer.withCurrent(container) { MigrationStatus.importStatus }
            guard case .failure(let error)? = status else {
                Issue.record("expected failure, got \(String(describing: status))")
                return
            }
            #expect((error as NSError).domain == (ImportFailure.tooNew as NSError).domain)
            #expect((error as NSError).code == 1)
            #expect((error as NSError).userInfo[MigrationStatus.errorDescriptionUserInfoKey] as? String == "tooNew")
            #expect(
                ((error as NSError).userInfo[MigrationStatus.errorTypeUserInfoKey] as? String)?
                    .hasSuffix("MigrationStatusTests.ImportFailure") == true)
        }
    }

    /// An import interrupted (Ctrl-C on `amk import` or `amk receive`, the caller's task
    /// cancelled) was recorded as "CancellationError()", a Swift type's name the app showed its
    /// user; it says what happened, and keeps the type for programs.
    @Test func aCancelledImportIsRecordedInWords() async throws {
        try await Scratch.with { scratch in
            let container = try scratch.container("app")
            try MigrationStatus.record(.failure(CancellationError()), in: container)
            let status = MigrationDataContainer.withCurrent(container) { MigrationStatus.importStatus }
            guard case .failure(let error)? = status else {
                Issue.record("expected failure, got \(String(describing: status))")
                return
            }
            let message = (error as NSError).userInfo[MigrationStatus.errorDescriptionUserInfoKey] as? String
            #expect(
                message?.contains("cancelled") == true && message?.contains("CancellationError") == false, "\(String(describing: message))")
            #expect(error.localizedDescription == message)
            #expect(((error as NSError).userInfo[MigrationStatus.errorTypeUserInfoKey] as? String)?.hasSuffix("CancellationError") == true)
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
