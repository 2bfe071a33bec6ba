public import Foundation
import IndexedArchive

/// An extension that runs in a process of its own: an executable whose entry point is a type
/// conforming to the extension protocols (see ``AppMigrationExtension/main()``).
///
/// Hand it to ``MigrationSystem`` like any extension. The host starts the executable for each
/// export or import, in a process group of its own, with the container as working directory, a
/// minimal environment and no descriptors but standard input (/dev/null), output and error (the
/// host's standard error) and the protocol's channel. A stall or a cancellation ends in SIGKILL
/// of the whole group if the extension does not stop within the grace period, and the host
/// answers only after the process is reaped: unlike an in-process extension, one that ignores
/// cancellation is really gone, and cannot touch the container after the host clears or unlocks it.
///
/// ```swift
/// let notes = ExtensionExecutable(path: "/usr/libexec/notes-migration")
/// try await MigrationSystem().exportResources(
///     of: notes, from: container, request: MigrationRequest(destinationPlatform: .android), to: archive)
/// ```
///
/// Its properties (``resourcesSizeEstimate``, ``resourcesVersion``, ``resourcesCompressible``)
/// live in the process: the host asks the process for them, and read here they are only
/// placeholders (0, "", true).
public struct ExtensionExecutable: ResourcesExporting, ResourcesImporting {
    /// The executable's path.
    public var path: String
    /// Arguments after the executable's name.
    public var arguments: [String]
    /// Variables added to the minimal environment the process gets (`PATH`, `HOME` and `TMPDIR`
    /// in the container, `LANG`, and the container and channel variables).
    public var environment: [String: String]
    /// How long the extension has to stop once cancelled, when it is not run by a
    /// ``MigrationSystem`` (which uses its watchdog policy's grace period).
    public var gracePeriod: Duration

    /// Mirrors the process's import progress when ``importResources(at:request:)`` is called directly.
    public let resourcesImportProgress = Progress(totalUnitCount: 100)

    /// No executable: running it fails with ``AppMigrationError/Code/extensionProcessFailed``.
    /// (The extension protocols require an initializer without arguments, as AppMigrationKit's
    /// `AppExtension` does.)
    public init() {
        self.init(path: "")
    }

    /// The executable at `path`, run with `arguments` and `environment` added to the minimal one.
    public init(path: String, arguments: [String] = [], environment: [String: String] = [:], gracePeriod: Duration = .seconds(2)) {
        self.path = path
        self.arguments = arguments
        self.environment = environment
        self.gracePeriod = gracePeriod
    }

    /// The name errors and the archive's metadata give it by default: the executable's file name.
    public var name: String {
        PathBytes.lastComponent(path) ?? "extension"
    }

    /// 0: the host asks the process.
    public var resourcesSizeEstimate: Int { 0 }
    /// Empty: the host asks the process.
    public var resourcesVersion: String { "" }
    /// True: the host asks the process.
    public var resourcesCompressible: Bool { true }

    /// Runs the process's export, appending what it appends to `archiver`. A ``MigrationSystem``
    /// does not call this (it runs the process itself, under its watchdog); this is for running
    /// the executable under another host, such as ``AppMigrationTester``.
    public func exportResources(to archiver: sending ResourcesArchiver, request: MigrationRequest) async throws {
        // MigrationDefaultSupportedOptions has no cases: there are never options to pass on.
        let archiver = archiver
        try await ExtensionSession.run(self, name: name, container: appContainer, gracePeriod: gracePeriod, watchdog: nil) { session in
            _ = try await session.startExport(destinationPlatform: request.destinationPlatform, options: [:])
            try await session.serveAppends(into: archiver)
        }
    }

    /// Runs the process's import of `url`, mirroring its progress into ``resourcesImportProgress``.
    /// As for ``exportResources(to:request:)``, a ``MigrationSystem`` runs the process itself.
    public func importResources(at url: URL, request: ResourcesImportRequest) async throws {
        let progress = resourcesImportProgress
        try await ExtensionSession.run(self, name: name, container: appContainer, gracePeriod: gracePeriod, watchdog: nil) { session in
            try await session.runImport(
                staging: url, request: request, watchdog: nil, progress: progress, progressRange: (0, progress.totalUnitCount))
        }
    }
}
