import ArgumentParser
import Foundation
import IndexedArchive

/// `amk list A`: the members of an archive, from its index when it has one (no decompression),
/// otherwise by reading it through.
struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the members of an archive."
    )

    @Argument(help: ArgumentHelp("The archive to list.", valueName: "archive"), completion: .file())
    var archive: String

    @Flag(name: [.short, .long], help: "Show mode, size and modification time, like tar -tv.")
    var long = false

    @Flag(help: "Print a JSON array of objects (path, type, size, mode, uid, gid, mtime, linkTarget).")
    var json = false

    func validate() throws {
        if long && json {
            throw ValidationError("--long and --json cannot be used together.")
        }
    }

    func run() async throws {
        let path = archive
        let entries = try await SignalCancellation.run {
            try await ArchiveReader(path: path).entries()
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
            let data = try encoder.encode(entries.map(ListedEntry.init))
            print(String(decoding: data, as: UTF8.self))
        } else if long {
            let listing = LongListing(entries: entries)
            for entry in entries { print(listing.line(for: entry)) }
        } else {
            for entry in entries { print(entry.path) }
        }
    }
}
