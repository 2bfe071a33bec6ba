import AppMigration
import ArgumentParser
import Foundation
import IndexedArchive

/// The options `amk send` and `amk receive` share: which container, which extension.
struct ContainerOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp("The app's data container: the folder holding Documents and Library.", valueName: "dir"),
        completion: .directory)
    var container: String

    @OptionGroup var extensionChoice: ExtensionChoice

    @Option(
        help: ArgumentHelp(
            "The app's bundle identifier (default: the container folder's name, as in export and import).",
            valueName: "id"))
    var bundleIdentifier: String?

    /// The container, with its standard folders created.
    func dataContainer() throws -> MigrationDataContainer {
        let root = URL(filePath: container, directoryHint: .isDirectory)
        let container = MigrationDataContainer(
            bundleIdentifier: bundleIdentifier ?? root.lastPathComponent,
            containerRootDirectory: root)
        try container.createStandardDirectories()
        return container
    }
}
