import AppMigration
import ArgumentParser
import Foundation

/// The migration extensions built into `amk`, chosen by name with `--extension`.
///
/// A real app ships its own extension; these stand in for one so that `amk export`, `amk import`
/// and `amk demo` can move a container without writing Swift. Each is an ordinary
/// AppMigrationKit-shaped extension: the host runs it exactly as it would run an app's.
enum SampleExtension: String, CaseIterable, ExpressibleByArgument, Sendable {
    /// Documents and Library/Application Support, compressed.
    case sample
    /// The same data stored uncompressed: for media-heavy containers, where compressing is time
    /// spent for nothing.
    case sampleStored = "sample-stored"
    /// Documents only, one append per file (the directory-enumeration pattern).
    case documents
    /// Documents and Library whole, merged into the container on import (``ContainerFilesMigration``).
    case files

    static var allValueStrings: [String] { allCases.map(\.rawValue) }

    /// What each does, for `--help`.
    var summary: String {
        switch self {
        case .sample: "Documents and Library/Application Support, compressed"
        case .sampleStored: "the same, stored uncompressed (media-heavy containers)"
        case .documents: "Documents only, appended file by file"
        case .files: "Documents and Library whole, merged into the container"
        }
    }

    static var helpText: String {
        allCases.map { "\($0.rawValue): \($0.summary)" }.joined(separator: "; ")
    }

    /// This extension as an extension process: the `amk-sample-extensions` executable installed
    /// beside `amk`, with this extension's name as its argument.
    func executable() throws -> ExtensionExecutable {
        let path = try Self.samplesExecutable()
        return ExtensionExecutable(path: path, arguments: [rawValue])
    }

    /// The built-in extensions' executable: beside the running `amk`, symbolic links resolved.
    static func samplesExecutable() throws -> String {
        let program = URL(filePath: "/proc/self/exe").resolvingSymlinksInPath()
        let path = program.deletingLastPathComponent().appending(path: "amk-sample-extensions").path(percentEncoded: false)
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw ValidationError(
                "the built-in extensions run as processes of the amk-sample-extensions executable, which is not beside amk "
                    + "(looked for \(path)): build it with `swift build --product amk-sample-extensions` (or `swift build`), "
                    + "or name an extension executable with --extension-executable")
        }
        return path
    }
}
