import Foundation
import Synchronization
import Testing

@testable import AppMigration

/// The reference article's model (reference/data-migration-patterns.txt), at its current version 3.
struct UserProfile: Codable, Equatable {
    struct Preferences: Codable, Equatable {
        let theme: String
        let language: String
        let currency: String
    }
    struct NotificationSettings: Codable, Equatable {
        let pushEnabled: Bool
        let emailEnabled: Bool
        let transactionAlerts: Bool
        let marketingOptIn: Bool
    }
    static let schemaVersion = 3
    static let modelIdentifier = "user_profile"
    let userId: String
    let displayName: String
    let email: String
    let preferences: Preferences
    let notificationSettings: NotificationSettings
}

/// The article's two steps, as raw-JSON steps.
let userProfileSteps: [SchemaMigrationStep] = [
    .json(model: "user_profile", from: 1) { json in
        json["preferences"] = ["theme": "system", "language": "en", "currency": "USD"]
    },
    .json(model: "user_profile", from: 2) { json in
        json["notificationSettings"] = [
            "pushEnabled": true, "emailEnabled": true, "transactionAlerts": true,
            "marketingOptIn": false
        ]
    }
]

let v1Profile = Data(#"{"userId":"usr_123","displayName":"Ahmed","email":"ahmed@example.com"}"#.utf8)
let v2Profile = Data(
    #"""
    {"userId":"usr_456","displayName":"Sara","email":"sara@example.com",
     "preferences":{"theme":"dark","language":"ar","currency":"EGP"}}
    """#.utf8)

@Suite struct SchemaMigratorTests {
    struct Boom: Error {}

    @Test func v1SkipsStraightToV3() throws {
        let migrator = SchemaMigrator(userProfileSteps)
        let result = try migrator.migrate(v1Profile, model: "user_profile", from: 1, to: 3)
        let profile = try JSONDecoder().decode(UserProfile.self, from: result)
        #expect(profile.userId == "usr_123")
        #expect(profile.preferences.theme == "system")
        #expect(profile.notificationSettings.transactionAlerts)
        #expect(!profile.notificationSettings.marketingOptIn)
    }

    @Test func migrationPreservesExistingData() throws {
        let result = try SchemaMigrator(userProfileSteps).migrate(v2Profile, model: "user_profile", from: 2, to: 3)
        let profile = try JSONDecoder().decode(UserProfile.self, from: result)
        #expect(profile.preferences == .init(theme: "dark", language: "ar", currency: "EGP"))
        #expect(profile.notificationSettings.pushEnabled)
    }

    @Test func sameVersionIsUnchanged() throws {
        #expect(try SchemaMigrator().migrate(v1Profile, model: "user_profile", from: 3, to: 3) == v1Profile)
    }

    @Test func aMissingStepNamesTheModelAndVersionsBeforeAnythingRuns() throws {
        var migrator = SchemaMigrator()
        let ran = RanFlag()
        migrator.register(model: "notes", from: 1) { data in
            ran.set()
            return data
        }
        migrator.register(model: "notes", from: 3) { data in
            ran.set()
            return data
        }
        #expect(throws: SchemaMigrationError.self) { try migrator.migrate(Data(), model: "notes", from: 1, to: 4) }
        do {
            _ = try migrator.steps(for: "notes", from: 1, to: 4)
            Issue.record("a gap was accepted")
        } catch {
            guard case .missingStep(let model, let from, let to) = error else {
                Issue.record("\(error)")
                return
            }
            #expect(model == "notes" && from == 2 && to == 3)
        }
        #expect(!ran.value)
    }

    @Test func laterRegistrationReplaces() throws {
        var migrator = SchemaMigrator()
        migrator.register(model: "m", from: 1) { _ in Data("a".utf8) }
        migrator.register(model: "m", from: 1) { _ in Data("b".utf8) }
        #expect(try migrator.migrate(Data(), model: "m", from: 1, to: 2) == Data("b".utf8))
    }

    @Test func sourceVersionStringsSelectTheFirstStep() throws {
        #expect(SchemaMigrator.schemaVersion(from: "2.0") == 2)
        #expect(SchemaMigrator.schemaVersion(from: "v3") == 3)
        #expect(SchemaMigrator.schemaVersion(from: " 1 ") == 1)
        #expect(SchemaMigrator.schemaVersion(from: "beta") == nil)
        let migrator = SchemaMigrator(userProfileSteps)
        let result = try migrator.migrate(v1Profile, model: "user_profile", fromSourceVersion: "1.4", to: 3)
        #expect(try JSONDecoder().decode(UserProfile.self, from: result).userId == "usr_123")
        #expect(throws: SchemaMigrationError.self) {
            try migrator.migrate(v1Profile, model: "user_profile", fromSourceVersion: "", to: 3)
        }
    }

    // MARK: - Stored data

    @Test func storedDataIsMigratedAndTheVersionUpdated() throws {
        try TransferScratch.with { scratch in
            let store = try VersionedStore(directory: scratch.root)
            try Data(v1Profile).write(to: scratch.url("user_profile.data"))  // a release before versioning
            let profile = try SchemaMigrator(userProfileSteps).migrateStored(
                "user_profile", in: store, to: 3,
                validatingAs: UserProfile.self)
            #expect(profile?.email == "ahmed@example.com")
            #expect(try store.read("user_profile")?.version == 3)
            #expect(try scratch.names() == ["user_profile.data", "user_profile.version"])
            // Again: nothing to do, same data.
            let again = try SchemaMigrator().migrateStored("user_profile", in: store, to: 3, validatingAs: UserProfile.self)
            #expect(again == profile)
        }
    }

    @Test func noStoredDataIsNil() throws {
        try TransferScratch.with { scratch in
            let store = try VersionedStore(directory: scratch.root)
            let found4 = try SchemaMigrator(userProfileSteps).migrateStored("user_profile", in: store, to: 3)
            #expect(found4 == nil)
        }
    }

    @Test func aDowngradeIsRefused() throws {
        try TransferScratch.with { scratch in
            let store = try VersionedStore(directory: scratch.root)
            try store.write(v1Profile, version: 5, for: "user_profile")
            #expect(throws: SchemaMigrationError.self) {
                try SchemaMigrator(userProfileSteps).migrateStored("user_profile", in: store, to: 3)
            }
            #expect(try store.read("user_profile") == .init(data: v1Profile, version: 5))
        }
    }

    @Test func aThrowingStepLeavesTheStoredDataExactlyAsItWas() throws {
        try TransferScratch.with { scratch in
            let store = try VersionedStore(directory: scratch.root)
            try store.write(v1Profile, version: 1, for: "user_profile")
            var migrator = SchemaMigrator(userProfileSteps)
            migrator.register(model: "user_profile", from: 2) { _ in throw Boom() }
            do {
                try migrator.migrateStored("user_profile", in: store, to: 3)
                Issue.record("a throwing step succeeded")
            } catch {
                guard case .stepFailed(let model, 2, 3, let underlying) = error as? SchemaMigrationError else {
                    Issue.record("wrong error \(error)")
                    return
                }
                #expect(model == "user_profile" && underlying is Boom)
            }
            #expect(try store.read("user_profile") == .init(data: v1Profile, version: 1))
            #expect(try scratch.names() == ["user_profile.data", "user_profile.version"])
        }
    }

    @Test func failedValidationLeavesTheStoredDataExactlyAsItWas() throws {
        try TransferScratch.with { scratch in
            let store = try VersionedStore(directory: scratch.root)
            try store.write(v1Profile, version: 1, for: "user_profile")
            // Only the first step: the result lacks notificationSettings, so it does not decode.
            let migrator = SchemaMigrator([userProfileSteps[0], SchemaMigrationStep(model: "user_profile", from: 2) { $0 }])
            do {
                _ = try migrator.migrateStored("user_profile", in: store, to: 3, validatingAs: UserProfile.self)
                Issue.record("invalid data was stored")
            } catch {
                guard case .validationFailed("user_profile", 3, let underlying) = error as? SchemaMigrationError else {
                    Issue.record("wrong error \(error)")
                    return
                }
                #expect(underlying is DecodingError)
            }
            #expect(try store.read("user_profile") == .init(data: v1Profile, version: 1))
            #expect(try scratch.names() == ["user_profile.data", "user_profile.version"])
        }
    }

    /// The data was replaced, then writing the version failed: the backup is put back.
    @Test func aFailedVersionWriteRollsTheDataBack() throws {
        try TransferScratch.with { scratch in
            var store = try VersionedStore(directory: scratch.root)
            try store.write(v1Profile, version: 1, for: "user_profile")
            let versionPath = store.path("user_profile", "version")
            let failOnce = RanFlag()
            store.probe = DurabilityProbe { point in
                if point == .createTemporary(path: versionPath), !failOnce.value {
                    failOnce.set()
                    throw Boom()
                }
            }
            #expect(throws: Boom.self) { try SchemaMigrator(userProfileSteps).migrateStored("user_profile", in: store, to: 3) }
            #expect(failOnce.value)
            #expect(try store.read("user_profile") == .init(data: v1Profile, version: 1))
            #expect(try scratch.names() == ["user_profile.data", "user_profile.version"])
        }
    }

    /// A power cut before each change the migration makes; then a "reboot" migrates again. At no
    /// point may the data and the version disagree, and the end is always the migrated data.
    @Test func aPowerCutAtEveryPointIsHarmless() throws {
        let migrated = try SchemaMigrator(userProfileSteps).migrate(v1Profile, model: "user_profile", from: 1, to: 3)
        let counter = PowerCut()
        try TransferScratch.with { scratch in
            var store = try VersionedStore(directory: scratch.root)
            try store.write(v1Profile, version: 1, for: "user_profile")
            store.probe = counter.probe
            try SchemaMigrator(userProfileSteps).migrateStored("user_profile", in: store, to: 3)
        }
        let points = counter.points.count
        #expect(points >= 15)  // backup, data, version: 5 each; unlink + fsync of the backup
        for allowed in 0..<points {
            try TransferScratch.with { scratch in
                var store = try VersionedStore(directory: scratch.root)
                try store.write(v1Profile, version: 1, for: "user_profile")
                let cut = PowerCut(after: allowed)
                store.probe = cut.probe
                do {
                    try SchemaMigrator(userProfileSteps).migrateStored("user_profile", in: store, to: 3)
                    Issue.record("no cut after \(allowed) changes")
                } catch let error as SchemaMigrationError {
                    // The rollback ran into the cut as well.
                    guard case .rollbackFailed(_, let underlying, let rollback) = error else {
                        Issue.record("\(error)")
                        return
                    }
                    #expect(underlying is PowerCut.Cut && rollback is PowerCut.Cut)
                } catch {
                    #expect(error is PowerCut.Cut, "\(error)")
                }
                #expect(cut.tripped)
                // After the reboot: settle, then the state is old or new, never a mixture.
                store.probe = nil
                try store.recover("user_profile")
                let record = try store.read("user_profile")
                #expect(
                    record == .init(data: v1Profile, version: 1) || record == .init(data: migrated, version: 3),
                    "cut after \(allowed) changes: \(String(describing: record))")
                let data = try SchemaMigrator(userProfileSteps).migrateStored("user_profile", in: store, to: 3)
                #expect(data == migrated)
                #expect(try scratch.names() == ["user_profile.data", "user_profile.version"])
            }
        }
    }
}

/// A flag set from a `@Sendable` closure.
final class RanFlag: Sendable {
    private let flag = Mutex(false)
    func set() { flag.withLock { $0 = true } }
    var value: Bool { flag.withLock { $0 } }
}
