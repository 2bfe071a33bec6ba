public import Foundation
import IndexedArchive

extension AppMigrationTester {
    /// Runs the registered extension's export as the host would, then extracts the archive so the
    /// test can look at what a destination would receive.
    ///
    /// A class, as in AppMigrationKit, reached through ``AppMigrationTester/exportController``.
    /// `Sendable`: it holds only immutable, `Sendable` values.
    public final class AppExportController: Sendable {
        let registration: Registration
        let platform: MigrationPlatform

        init(registration: Registration, platform: MigrationPlatform) {
            self.registration = registration
            self.platform = platform
        }

        /// Exports with `request`, or, if it is `nil`, a request for the tester's platform with no
        /// options.
        ///
        /// - Parameter request: the request the extension gets; `nil` for the tester's platform.
        /// - Parameter progress: gets a child progress (see
        ///   ``MigrationSystem/exportResources(of:named:from:request:to:sourceApp:progress:)``)
        ///   and is complete when the export is.
        /// - Throws: ``AppMigrationError`` `.unsupportedExtension` if the extension does not
        ///   export; otherwise what ``MigrationSystem/exportResources(of:named:from:request:to:sourceApp:progress:)``
        ///   throws.
        public func exportResources(request: MigrationRequest? = nil, progress: Progress? = nil) async throws
            -> AppMigrationTester.ResourcesExportResult
        {
            try await export(request ?? MigrationRequest(destinationPlatform: platform), progress: progress)
        }

        /// Exports with a request in an options type of the test's choosing (by default one for
        /// the tester's platform with no options). Options reach the extension by raw value; those
        /// its `OptionsType` cannot represent are dropped, so a ``ResourcesExporting`` extension
        /// never receives one.
        public func exportResources<SupportedOptions>(
            request: MigrationRequestWithOptions<SupportedOptions>? = nil, progress: Progress? = nil
        ) async throws -> AppMigrationTester.ResourcesExportResult
        where
            SupportedOptions: CaseIterable, SupportedOptions: Hashable, SupportedOptions: RawRepresentable,
            SupportedOptions: Sendable, SupportedOptions.RawValue == String
        {
            try await export(
                request ?? MigrationRequestWithOptions<SupportedOptions>(destinationPlatform: platform),
                progress: progress)
        }

        private func export<Options>(_ request: MigrationRequestWithOptions<Options>, progress: Progress?)
            async throws -> AppMigrationTester.ResourcesExportResult
        {
            guard let exporter = registration.migrationExtension as? any ResourcesExportingWithOptions else {
                throw AppMigrationError(
                    .unsupportedExtension, "does not export: it does not adopt ResourcesExportingWithOptions",
                    extensionName: registration.name)
            }
            return try await run(exporter, request: request, progress: progress)
        }

        private func run<Extension: ResourcesExportingWithOptions, Options>(
            _ exporter: Extension, request: MigrationRequestWithOptions<Options>, progress: Progress?
        ) async throws -> AppMigrationTester.ResourcesExportResult {
            let id = UUID().uuidString
            let work = registration.workDirectory
            try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
            let archive = work.appending(path: "export-\(id).tar.xz", directoryHint: .notDirectory)
            let extracted = work.appending(path: "export-\(id)", directoryHint: .isDirectory)
            let sourceApp = MigrationAppIdentifier(
                storeIdentifier: .unknown,
                bundleIdentifier: registration.exportContainer.bundleIdentifier,
                platform: .current)
            let properties = try await registration.system.exportResources(
                of: exporter, named: registration.name, from: registration.exportContainer,
                request: request.converted(to: Extension.OptionsType.self), to: archive,
                sourceApp: sourceApp, progress: progress)
            try FileManager.default.createDirectory(at: extracted, withIntermediateDirectories: true)
            // As an import extracts: a link leading out of the folder fails here with the error
            // the real import of this archive gives, where the round trip used to pass.
            // The export is this host's own: what its members declare is what it wrote.
            let reader = try await ArchiveReader.open(path: archive.path(percentEncoded: false))
            let declared = try await reader.entries().reduce(UInt64(0)) { sum, entry in
                let (total, overflow) = sum.addingReportingOverflow(entry.size)
                return overflow ? .max : total
            }
            try await MigrationSystem.extractAsImport(
                reader, to: extracted, declaredContent: declared,
                extensionName: registration.name, path: archive.path(percentEncoded: false))
            return AppMigrationTester.ResourcesExportResult(
                extractedResourcesURL: extracted, exportProperties: properties, archiveURL: archive)
        }
    }
}
