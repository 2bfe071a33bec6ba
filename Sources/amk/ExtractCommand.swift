import ArgumentParser
import Foundation
import IndexedArchive

/// `amk extract A [MEMBER...] [-C DIR]`: writes members under a directory, and nowhere else.
///
/// The engine refuses absolute paths, `..` and writing through symbolic links, and removes a file
/// it was writing when extraction fails or is interrupted; files finished before that stay.
/// The `-C` folder is created with its parents once the archive has opened, and removed again
/// if the extraction fails before anything is written into it (``DestinationDirectory``).
struct ExtractCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "extract",
        abstract: "Extract an archive, or some of its members.",
        discussion: "A directory given as MEMBER selects everything under it."
    )

    @Argument(help: ArgumentHelp("The archive to extract.", valueName: "archive"), completion: .file())
    var archive: String

    @Argument(help: ArgumentHelp("Members to extract, as `amk list` prints them, escapes such as \\n and \\\\ included (default: all).",
                                 valueName: "member"))
    var members: [String] = []

    @Option(name: [.customShort("C"), .customLong("directory")],
            help: ArgumentHelp("Extract under this directory (created with its parents if missing; default: the current directory).",
                               valueName: "dir"),
            completion: .directory)
    var directory: String = "."

    func run() async throws {
        // `amk list` escapes names (a newline prints as \n, a backslash as \\): undo that, so
        // that every member can be named by copying its line.
        let path = archive, members = members.map(TerminalSafe.parseName), directory = directory
        let summary = try await SignalCancellation.run {
            let reader = try await ArchiveReader.open(path: path)
            var options = ExtractOptions()
            if !members.isEmpty {
                // With an index, a misspelt member is caught before anything is written; without
                // one that would cost a full pass, so it is caught after (nothing extracted).
                if reader.mode == .indexed {
                    for member in members where try await reader.entry(named: member) == nil {
                        throw ArchiveError(.memberNotFound, "no such member", path: path, member: member)
                    }
                }
                options.members = Set(members)
            }
            // Only now that the archive has opened (and the members were found, with an index).
            let destination = try DestinationDirectory(creating: directory)
            do {
                let summary = try await reader.extract(to: directory, options: options)
                if !members.isEmpty && summary.entries == 0 {
                    throw ArchiveError(.memberNotFound, "no member matches \(members.map { "'\(TerminalSafe.name($0))'" }.joined(separator: ", "))",
                                       path: path)
                }
                return summary
            } catch {
                destination.removeIfEmpty()
                throw error
            }
        }
        for warning in summary.warnings {
            // The engine's warnings quote member names raw.
            StandardError.line("amk: warning: \(warning)")
        }
        print("extracted \(summary.entries) \(summary.entries == 1 ? "entry" : "entries"), "
              + "\(ByteSize.format(summary.bytes)) in \(ByteSize.formatSeconds(summary.seconds))")
    }
}
