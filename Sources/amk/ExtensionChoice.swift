import AppMigration
import ArgumentParser
import Foundation
import IndexedArchive

/// `--extension NAME` or `--extension-executable PATH`: which extension export, import, send and
/// receive run. Either way it runs as an extension process (see ``ExtensionExecutable``): a
/// built-in one as a process of `amk-sample-extensions`, a user's as a process of its executable.
struct ExtensionChoice: ParsableArguments {
    @Option(
        name: .customLong("extension"),
        help: ArgumentHelp("The built-in extension to run: \(SampleExtension.helpText).", valueName: "name"))
    var builtIn: SampleExtension?

    @Option(
        name: .customLong("extension-executable"),
        help: ArgumentHelp(
            "Run your own extension executable instead (its @main type conforms to the extension protocols).",
            valueName: "path"),
        completion: .file())
    var executablePath: String?

    func validate() throws {
        if builtIn != nil && executablePath != nil {
            throw ValidationError("Give --extension or --extension-executable, not both.")
        }
        // Before anything is done: a misspelt path let import clear the container (as after
        // any failed import), and receive listen, pair and take the whole transfer first.
        if let executablePath {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: executablePath, isDirectory: &isDirectory), !isDirectory.boolValue,
                FileManager.default.isExecutableFile(atPath: executablePath)
            else {
                throw ValidationError("--extension-executable '\(TerminalSafe.name(executablePath))' is not an executable file.")
            }
        }
    }

    /// The extension to run, and the name errors and the archive's metadata give it.
    func resolve(default fallback: SampleExtension) throws -> (executable: ExtensionExecutable, name: String) {
        if let executablePath {
            let absolute = URL(filePath: executablePath).standardizedFileURL.path(percentEncoded: false)
            let executable = ExtensionExecutable(path: absolute)
            return (executable, executable.name)
        }
        let chosen = builtIn ?? fallback
        return (try chosen.executable(), chosen.rawValue)
    }
}
