public import Foundation

/// Exercises a migration extension's export and import in unit tests, through the same host code
/// a real migration uses.
///
/// On iOS the tester finds the extension and its container from the test host. Here they are
/// registered for a scope with `withExtension(_:named:exportContainer:importContainer:workDirectory:system:operation:)`
/// (a test suite does it in one line with the `.appMigrationExtension(...)` trait of the
/// `AppMigrationTesting` library). Inside the scope the export side reads
/// `exportContainer`, the import side writes `importContainer` (two devices, one test), and the
/// current container (``MigrationStatus/importStatus``) is the import side's.
///
/// ```swift
/// let tester = try await AppMigrationTester(platform: .android)
/// let result = try await tester.exportController.exportResources()
/// try await tester.importController.importResources(from: result.extractedResourcesURL)
/// try await tester.importController.registerImportCompletion(with: .success)
/// ```
public actor AppMigrationTester {
    /// The extension under test and the places it works in, registered for a scope.
    struct Registration: Sendable {
        var migrationExtension: any AppMigrationExtension
        var name: String
        var exportContainer: MigrationDataContainer
        var importContainer: MigrationDataContainer
        var workDirectory: URL
        var system: MigrationSystem
    }

    @TaskLocal static var registration: Registration?

    /// The platform of the other device: the destination of exports, the source of imports.
    public nonisolated let platform: MigrationPlatform
    private nonisolated let registration: Registration

    /// Runs exports. Asynchronous and throwing, as in AppMigrationKit; here it throws nothing.
    public var exportController: AppExportController {
        get async throws { AppExportController(registration: registration, platform: platform) }
    }

    /// Runs imports and records their outcome. Asynchronous and throwing, as in AppMigrationKit;
    /// here it throws nothing.
    public var importController: AppImportController {
        get async throws { AppImportController(registration: registration, platform: platform) }
    }

    /// A tester for the extension registered in the current scope.
    ///
    /// - Throws: ``AppMigrationError`` `.noExtensionRegistered` outside such a scope.
    public init(platform: MigrationPlatform) async throws {
        guard let registration = AppMigrationTester.registration else {
            throw AppMigrationError(
                .noExtensionRegistered,
                "no extension is registered: run the test inside AppMigrationTester.withExtension(_:...) or a suite trait that calls it")
        }
        self.platform = platform
        self.registration = registration
    }

    /// Runs `operation` with `migrationExtension` registered for testers created inside it.
    ///
    /// - Parameters:
    ///   - migrationExtension: the extension under test.
    ///   - name: the extension's name in errors; by default its type's name.
    ///   - exportContainer: the container exports read from (the sending device).
    ///   - importContainer: the container imports write to (the receiving device); it is the
    ///     current container inside `operation`.
    ///   - workDirectory: where archives and extracted exports are written.
    ///   - system: the host settings (watchdog policy, preset).
    ///   - isolation: the actor `operation` runs on (the caller's).
    ///   - operation: the test's body.
    public static func withExtension<T>(
        _ migrationExtension: any AppMigrationExtension, named name: String? = nil,
        exportContainer: MigrationDataContainer, importContainer: MigrationDataContainer,
        workDirectory: URL, system: MigrationSystem = MigrationSystem(),
        isolation: isolated (any Actor)? = #isolation,
        operation: () async throws -> T
    ) async rethrows -> T {
        let registration = Registration(
            migrationExtension: migrationExtension, name: name ?? String(describing: type(of: migrationExtension)),
            exportContainer: exportContainer, importContainer: importContainer, workDirectory: workDirectory, system: system)
        return try await $registration.withValue(registration) {
            try await MigrationDataContainer.withCurrent(importContainer, operation: operation)
        }
    }
}
