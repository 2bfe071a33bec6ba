// Re-exported, so that a suite may import this module alone.
@_exported public import AppMigrationKit
import Foundation
public import Testing

/// Registers a migration extension for `AppMigrationTester` around each test of a suite: the
/// one line a test suite written for AppMigrationKit needs here.
///
/// On iOS the tester finds the extension and the app's container from the test host. Here
/// nothing hosts the test, so the trait makes, for each test case, a fresh extension and a fresh
/// container in a temporary folder (removed afterwards), current for the test's code: the
/// extension's `appContainer` is that container, exports read it, imports write it, and
/// `MigrationStatus.importStatus` reads it, as on a device with one app.
///
/// ```swift
/// @Suite(.appMigrationExtension(MyMigration()))
/// struct MyMigrationTests { ... }
/// ```
public struct AppMigrationExtensionTrait: SuiteTrait, TestTrait, TestScoping {
    let makeExtension: @Sendable () -> any AppMigrationExtension
    let bundleIdentifier: String
    let appGroups: [String]
    let seed: @Sendable (MigrationDataContainer) throws -> Void
    let system: MigrationSystem

    /// Applies to every test in the suite, nested suites included.
    public var isRecursive: Bool { true }

    /// Containers are per test case: a suite gets no scope of its own.
    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    /// Runs the test with the extension registered and a fresh container current.
    public func provideScope(
        for test: Test, testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        let root = FileManager.default.temporaryDirectory
            .appending(path: "amk-test-\(UUID().uuidString)", directoryHint: .isDirectory)
        defer { try? FileManager.default.removeItem(at: root) }
        // Each group a folder of its own beside the container, as on a device: the extension's
        // `containerURL(forSecurityApplicationGroupIdentifier:)` finds it.
        let groups = Dictionary(
            appGroups.enumerated().map { index, group in
                (group, root.appending(path: "groups/\(index)", directoryHint: .isDirectory))
            },
            uniquingKeysWith: { first, _ in first })
        let container = MigrationDataContainer(
            bundleIdentifier: bundleIdentifier,
            containerRootDirectory: root.appending(
                path: "container",
                directoryHint: .isDirectory),
            appGroupDirectories: groups)
        for folder in groups.values { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) }
        try container.createStandardDirectories()
        try seed(container)
        try await AppMigrationTester.withExtension(
            makeExtension(), exportContainer: container, importContainer: container,
            workDirectory: root.appending(path: "work", directoryHint: .isDirectory), system: system, operation: function)
    }
}

extension Trait where Self == AppMigrationExtensionTrait {
    /// Registers `migrationExtension` for the tests of a suite (a new instance for each test).
    ///
    /// - Parameters:
    ///   - migrationExtension: makes the extension under test, once per test.
    ///   - bundleIdentifier: the containing app's bundle identifier, as the container reports it.
    ///   - appGroups: the app-group identifiers the app belongs to: each gets a fresh folder,
    ///     which `containerURL(forSecurityApplicationGroupIdentifier:)` returns to the extension
    ///     and the test, and which exports may append from. The export and the import share them,
    ///     as they share the container.
    ///   - seed: fills the fresh container before each test, if the tests do not do it themselves.
    ///   - system: the host's settings (stall timeouts, compression); the defaults are the host's.
    public static func appMigrationExtension(
        _ migrationExtension: @autoclosure @escaping @Sendable () -> any AppMigrationExtension,
        bundleIdentifier: String = "com.example.app",
        appGroups: [String] = [],
        seed: @escaping @Sendable (MigrationDataContainer) throws -> Void = { _ in },
        system: MigrationSystem = MigrationSystem()
    ) -> Self {
        AppMigrationExtensionTrait(
            makeExtension: migrationExtension, bundleIdentifier: bundleIdentifier, appGroups: appGroups, seed: seed,
            system: system)
    }
}
