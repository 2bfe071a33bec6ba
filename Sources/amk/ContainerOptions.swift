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

    /// The container an import writes into, checked before anything else happens: a folder
    /// that holds data without being marked is refused (a failed import clears it) unless
    /// `adopt` says to mark it; an absent or empty one is created and marked.
    static func importTarget(_ container: MigrationDataContainer, adopt: Bool, extensionName: String) throws {
        if adopt { try container.createStandardDirectories() }
        do {
            try container.checkKnown(extensionName: extensionName)
        } catch var error as AppMigrationError
            where error.code == .notAContainer && !adopt && error.path == container.containerRootDirectory.path(percentEncoded: false)
        {
            // The folder itself holds data unmarked (a linked `.amk` names itself instead, and
            // adopting would not help it).
            error.message += "; to import into it anyway, and have it cleared if the import fails, pass --adopt-container"
            throw error
        }
    }

    /// Refuses a container path that is not a folder, before anything is made or sent there.
    static func requireFolder(_ path: String) throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ValidationError("The container '\(TerminalSafe.name(path))' is not a folder.")
        }
    }

    /// The container; with `creatingFolders`, its standard folders created and the folder marked.
    ///
    /// An import's container is never prepared here: the host itself marks a folder that is
    /// absent or empty, and refuses one that holds data without being marked (a failed import
    /// clears the container). Marking it here first once made any folder given to `receive`
    /// look like a container, and a failed import then emptied it.
    func dataContainer(creatingFolders: Bool) throws -> MigrationDataContainer {
        let root = URL(filePath: container, directoryHint: .isDirectory)
        let container = MigrationDataContainer(
            bundleIdentifier: bundleIdentifier ?? root.lastPathComponent,
            containerRootDirectory: root)
        if creatingFolders { try container.createStandardDirectories() }
        return container
    }
}
