public import Foundation
import IndexedArchive

extension AppMigrationTester {
    /// Runs the registered extension's export as the host would, then extracts the archive so the
    /// test can look at what a destination would receive.
    public struct ExportController: Sendable {
        let registration: Registration
        let platform: MigrationPlatform

        /// Exports with `request`, or, if it is `nil`, a request for the tester's platform with no
        /// options.
        ///
        /// - Parameter progress: advanced by the bytes stored.
        /// - Throws: ``AppMigrationError`` `.unsupportedExtension` if the extension does not
        ///   export; otherwise what ``MigrationSystem/exportResources(of:named:from:request:to:sourceApp:progress:)``
        ///   throws.
        public func exportResources(request: MigrationRequest?, progress: Progress?) async throws -> ResourcesExportResult {
            try await export(request ?? MigrationRequest(destinationPlatform: platform), progress: progress)
        }

        /// Exports with a request in an options type of the test's choosing; options are passed to
        /// the extension by raw value.
        public func exportResources<Options>(request: MigrationRequestWithOptions<Options>, progress: Progress?)
            async throws -> ResourcesExportResult {
            try await export(request, progress: progress)
        }

        private func export<Options>(_ request: MigrationRequestWithOptions<Options>, progress: Progress?)
            async throws -> ResourcesExportResult {
            guard let exporter = registration.migrationExtension as? any ResourcesExportingWithOptions else {
                throw AppMigrationError(.unsupportedExtension, "does not export: it does not adopt ResourcesExportingWithOptions",
                                        extensionName: registration.name)
            }
            return try await run(exporter, request: request, progress: progress)
        }

        private func run<Extension: ResourcesExportingWithOptions, Options>(
            _ exporter: Extension, request: MigrationRequestWithOptions<Options>, progress: Progress?
        ) async throws -> ResourcesExportResult {
            let id = UUID().uuidString
            let work = registration.workDirectory
            try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
            let archive = work.appending(path: "export-\(id).tar.xz", directoryHint: .notDirectory)
            let extracted = work.appending(path: "export-\(id)", directoryHint: .isDirectory)
            let sourceApp = MigrationAppIdentifier(storeIdentifier: .unknown,
                                                   bundleIdentifier: registration.exportContainer.bundleIdentifier,
                                                   platform: .current)
            let properties = try await registration.system.exportResources(
                of: exporter, named: registration.name, from: registration.exportContainer,
                request: request.converted(to: Extension.OptionsType.self), to: archive,
                sourceApp: sourceApp, progress: progress)
            try FileManager.default.createDirectory(at: extracted, withIntermediateDirectories: true)
            try await ArchiveReader.open(path: archive.path(percentEncoded: false)).extract(to: extracted.path(percentEncoded: false))
            return ResourcesExportResult(extractedResourcesURL: extracted, exportProperties: properties, archiveURL: archive)
        }
    }
}
