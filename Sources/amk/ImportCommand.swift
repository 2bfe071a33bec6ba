import AppMigration
import ArgumentParser
import Foundation
import IndexedArchive

/// `amk import A.tar.xz --container DIR --extension NAME`: imports an archive into an app
/// container through a migration extension, as the system would.
struct ImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import an archive into an app container through a migration extension.",
        discussion: """
            The archive is checked against the free space, extracted safely into a staging folder \
            inside the container, and handed to the extension with the source app and version \
            recorded at export. If the extension fails, the container's data is cleared (app-group \
            folders, which live outside it, are not) and the failure is recorded where the app \
            reads it (MigrationStatus.importStatus). The container is created if it does not \
            exist; a folder that holds data but was never marked as a container is refused unless \
            --adopt-container is given. Extensions: \(SampleExtension.helpText).

            Examples:
              amk import notes.tar.xz --container tablet/com.example.notes
            """
    )

    @Argument(help: ArgumentHelp("The archive made by `amk export`.", valueName: "archive"), completion: .file())
    var archive: String

    @Option(help: ArgumentHelp("The app container to import into.", valueName: "dir"), completion: .directory)
    var container: String

    @OptionGroup var extensionChoice: ExtensionChoice

    @Flag(
        help: ArgumentHelp(
            "Import into a folder that holds data but was never marked as an app container (.amk/container): "
                + "mark it first. A failed import clears it, which is why amk refuses such a folder without this flag."))
    var adoptContainer = false

    @Option(help: "The app's bundle identifier (default: the container folder's name).")
    var bundleIdentifier: String?

    @Flag(inversion: .prefixedNo, help: "Show a progress bar on standard error (default: only when it is a terminal).")
    var progress: Bool?

    @Flag(name: [.short, .long], help: "Log the host's and the engine's diagnostics (swift-log, debug level) on standard error.")
    var verbose = false

    func validate() throws {
        // `-` is standard input everywhere else in amk; here it read a file named `-`, if any.
        guard archive != "-" else {
            throw ValidationError(
                "import reads its archive from a file, not from standard input (-): name a file (./- for one named '-'), or receive it with amk receive."
            )
        }
        guard FileManager.default.isReadableFile(atPath: archive) else {
            throw ValidationError("The archive '\(TerminalSafe.name(archive))' cannot be read.")
        }
    }

    func run() async throws {
        let root = URL(filePath: container)
        let appContainer = MigrationDataContainer(
            bundleIdentifier: bundleIdentifier ?? root.lastPathComponent,
            containerRootDirectory: root)
        let chosen = try extensionChoice.resolve(default: .sample)
        try ContainerOptions.importTarget(appContainer, adopt: adoptContainer, extensionName: chosen.name)
        let source = URL(filePath: archive)
        let start = ContinuousClock.now
        let shown = Progress(totalUnitCount: 100)
        var system = MigrationSystem()
        system.logger = Diagnostics.logger("amk.import", verbose: verbose)
        let configured = system
        try await ProgressMonitor.run(shown, label: "importing", show: progress ?? StandardError.isTerminal, unit: .fraction) {
            try await SignalCancellation.run {
                try await configured.importResources(
                    from: source, into: appContainer, using: chosen.executable, named: chosen.name, progress: shown)
            }
        }
        let seconds = (ContinuousClock.now - start) / .seconds(1)
        print(
            "imported \(TerminalSafe.name(archive)) into \(TerminalSafe.name(container)) with \(TerminalSafe.name(chosen.name)) in \(ByteSize.formatSeconds(seconds)); "
                + "import status: success")
    }
}
