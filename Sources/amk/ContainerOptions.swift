import AppMigration
import ArgumentParser
import Foundation
import IndexedArchive

/// The options `amk send` and `amk receive` share: which container, which extension.
struct ContainerOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The app's data container: the folder holding Documents and Library.", valueName: "dir"),
            completion: .directory)
    var container: String

    @Option(name: .customLong("extension"),
            help: ArgumentHelp("The migration extension to run: \(ContainerFilesMigration.names.joined(separator: ", ")).",
                               valueName: "name"))
    var extensionName: String = "files"

    @Option(help: ArgumentHelp("The app's bundle identifier (default: the container folder's name, as in export and import).",
                               valueName: "id"))
    var bundleIdentifier: String?

    func validate() throws {
        guard ContainerFilesMigration.names.contains(extensionName) else {
            throw ValidationError("unknown extension '\(TerminalSafe.name(extensionName))'; known: \(ContainerFilesMigration.names.joined(separator: ", "))")
        }
    }

    /// The container, with its standard folders created.
    func dataContainer() throws -> MigrationDataContainer {
        let root = URL(filePath: container, directoryHint: .isDirectory)
        let container = MigrationDataContainer(bundleIdentifier: bundleIdentifier ?? root.lastPathComponent,
                                               containerRootDirectory: root)
        try container.createStandardDirectories()
        return container
    }
}
