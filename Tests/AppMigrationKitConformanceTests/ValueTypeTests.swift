// Written for iOS from Apple's AppMigrationKit reference pages alone: the framework's value
// types, which need no registered extension.
import AppMigrationKit
import Foundation
import Testing

@Suite struct ValueTypeTests {
    @Test func migrationPlatformIsARawStringValue() throws {
        let android: MigrationPlatform = .android
        #expect(MigrationPlatform("android") == android)
        #expect(MigrationPlatform(rawValue: android.rawValue) == android)
        #expect(MigrationPlatform("harmony") != android)
        #expect(Set([android, MigrationPlatform(android.rawValue)]).count == 1)
        let decoded = try JSONDecoder().decode(MigrationPlatform.self, from: JSONEncoder().encode(android))
        #expect(decoded == android)
    }

    @Test func storeIdentifierIsARawStringValue() {
        let play = MigrationAppIdentifier.StoreIdentifier.googlePlay
        #expect(MigrationAppIdentifier.StoreIdentifier(play.rawValue).rawValue == play.rawValue)
        #expect(MigrationAppIdentifier.StoreIdentifier(rawValue: "com.example.store").rawValue == "com.example.store")
    }

    @Test func appIdentifierAndImportRequestKeepWhatTheyAreGiven() {
        let store = MigrationAppIdentifier.StoreIdentifier("com.example.store")
        let app = MigrationAppIdentifier(
            storeIdentifier: store, bundleIdentifier: "com.example.app",
            platform: MigrationPlatform("other"))
        #expect(app.storeIdentifier.rawValue == "com.example.store")
        #expect(app.bundleIdentifier == "com.example.app")
        #expect(app.platform == MigrationPlatform("other"))
        let request = ResourcesImportRequest(sourceAppIdentifier: app, sourceVersion: "7")
        #expect(request.sourceAppIdentifier.bundleIdentifier == "com.example.app")
        #expect(request.sourceVersion == "7")
    }

    @Test func defaultSupportedOptionsHasNoValue() {
        #expect(MigrationDefaultSupportedOptions.allCases.isEmpty)
        #expect(MigrationDefaultSupportedOptions(rawValue: "") == nil)
        #expect(MigrationDefaultSupportedOptions(rawValue: "photos") == nil)
        let rawValue: KeyPath<MigrationDefaultSupportedOptions, String> = \.rawValue
        #expect(rawValue == \MigrationDefaultSupportedOptions.rawValue)
        var visited = 0
        for option: MigrationDefaultSupportedOptions in MigrationDefaultSupportedOptions.allCases {
            visited += 1
            switch option {}  // exhaustive without a case: the type has no values
        }
        #expect(visited == 0)
    }

    @Test func theAssociatedTypesAreTheDocumentedOnes() {
        #expect(MigrationPlatform.RawValue.self == String.self)
        #expect(MigrationAppIdentifier.StoreIdentifier.RawValue.self == String.self)
        #expect(MigrationDefaultSupportedOptions.RawValue.self == String.self)
        #expect(MigrationDefaultSupportedOptions.AllCases.self == [MigrationDefaultSupportedOptions].self)
    }

    @Test func migrationRequestIsTheRequestWithDefaultOptions() {
        let request: MigrationRequestWithOptions<MigrationDefaultSupportedOptions> =
            MigrationRequest(destinationPlatform: .android, options: [:])
        #expect(request.destinationPlatform == .android)
        #expect(request.options.isEmpty)
        #expect(MigrationRequest.self == MigrationRequestWithOptions<MigrationDefaultSupportedOptions>.self)
    }

    @Test func migrationStatusHasASuccessAndAFailureWithItsError() {
        let statuses: [MigrationStatus] = [.success, .failure(CocoaError(.fileReadCorruptFile))]
        var outcomes: [String] = []
        for status in statuses {
            switch status {
            case .success:
                outcomes.append("success")
            case .failure(let error):
                outcomes.append("failure \((error as NSError).code)")
            }
        }
        #expect(outcomes == ["success", "failure \(CocoaError.fileReadCorruptFile.rawValue)"])
    }
}
