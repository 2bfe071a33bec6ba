public import Foundation

extension AppMigrationTester {
    /// Runs the registered extension's import into the import container, as the host would after
    /// extraction, and records outcomes for the app to read.
    ///
    /// A class, as in AppMigrationKit, reached through ``AppMigrationTester/importController``.
    /// `Sendable`: it holds only immutable, `Sendable` values.
    public final class AppImportController: Sendable {
        let registration: Registration
        let platform: MigrationPlatform

        init(registration: Registration, platform: MigrationPlatform) {
            self.registration = registration
            self.platform = platform
        }

        /// Calls the extension's `importResources(at:request:)` on the files at `url`.
        ///
        /// Like the host, it holds the container's lock, runs the extension under the watchdog (with
        /// the host's sign-of-life rule, see ``MigrationSystem/importWatchdogPolicy``) with the
        /// import container current, and mirrors the extension's progress into `progress`,
        /// which is complete when the import succeeds. Unlike the host it neither clears the
        /// container on failure nor records a status: the test decides, with
        /// ``registerImportCompletion(with:)``.
        ///
        /// - Parameter url: the folder of resources to import (an extracted export).
        /// - Parameter progress: mirrors the extension's import progress; complete on success.
        /// - Parameter importRequest: by default the export container's app on the tester's
        ///   platform (from Google Play for `.android`), with the extension's own
        ///   `resourcesVersion` as the source version if it also exports.
        public func importResources(
            from url: URL, importRequest: ResourcesImportRequest? = nil,
            progress: Progress? = nil
        ) async throws {
            guard let importer = registration.migrationExtension as? any ResourcesImporting else {
                throw AppMigrationError(
                    .unsupportedExtension, "does not import: it does not adopt ResourcesImporting",
                    extensionName: registration.name)
            }
            try await run(importer, from: url, request: importRequest ?? defaultRequest(), progress: progress)
        }

        private func run<Extension: ResourcesImporting>(
            _ importer: Extension, from url: URL, request: ResourcesImportRequest,
            progress: Progress?
        ) async throws {
            let container = registration.importContainer
            let total = progress.map { $0.totalUnitCount > 0 ? $0.totalUnitCount : 100 } ?? 0
            if let progress, progress.totalUnitCount <= 0 { progress.totalUnitCount = total }
            try await ContainerLock.withLock(on: container, extensionName: registration.name) {
                try await MigrationSystem.runImporter(
                    importer, name: registration.name, at: url, request: request,
                    container: container, policy: registration.system.importWatchdogPolicy,
                    progress: progress, progressRange: (0, total))
            }
            progress?.completedUnitCount = total
        }

        private func defaultRequest() -> ResourcesImportRequest {
            let version = (registration.migrationExtension as? any ResourcesExportingWithOptions)?.resourcesVersion ?? ""
            let source = MigrationAppIdentifier(
                storeIdentifier: platform == .android ? .googlePlay : .unknown,
                bundleIdentifier: registration.exportContainer.bundleIdentifier, platform: platform)
            return ResourcesImportRequest(sourceAppIdentifier: source, sourceVersion: version)
        }

        /// Records `status` as the import's outcome in the import container, where
        /// ``MigrationStatus/importStatus`` reads it.
        public func registerImportCompletion(with status: MigrationStatus) async throws {
            try MigrationStatus.record(status, in: registration.importContainer)
        }
    }
}
