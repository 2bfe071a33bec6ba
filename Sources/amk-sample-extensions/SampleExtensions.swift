import AppMigration
import Foundation

/// The executable that runs `amk`'s built-in extensions as extension processes: `amk` starts it
/// with the extension's name as its one argument (`sample`, `sample-stored`, `documents` or
/// `files`), and it becomes that extension's process, exactly as an app's own extension
/// executable would (``AppMigrationExtension/main()``).
@main
enum SampleExtensions {
    static func main() async {
        let name = CommandLine.arguments.dropFirst().first ?? ""
        switch name {
        case "sample": await SampleAppMigration.main()
        case "sample-stored": await StoredSampleAppMigration.main()
        case "documents": await DocumentsFileByFileMigration.main()
        case "files": await ContainerFilesMigration.main()
        default:
            FileHandle.standardError.write(
                Data("usage: amk-sample-extensions sample|sample-stored|documents|files (started by amk, not by hand)\n".utf8))
            exit(64)
        }
    }
}
