import ArgumentParser
import Foundation
import IndexedArchive

/// `amk list A`: the members of an archive, from its index when it has one (no decompression),
/// otherwise by reading it through.
///
/// Names are printed through ``TerminalSafe/name(_:)``: one line per member whatever its name
/// holds, and no escape sequence from an archive reaches the terminal. `--json` prints the real
/// names, as JSON escapes where a terminal would act on them (``terminalSafeJSON(_:)``).
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
            try await ArchiveReader.open(path: path).entries()
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
            let data = try encoder.encode(entries.map(ListedEntry.init))
            print(Self.terminalSafeJSON(String(decoding: data, as: UTF8.self)))
        } else if long {
            let listing = LongListing(entries: entries)
            for entry in entries { print(listing.line(for: entry)) }
        } else {
            for entry in entries { print(TerminalSafe.name(entry.path)) }
        }
    }

    /// `json` with the characters ``TerminalSafe`` escapes written as `\uXXXX`.
    ///
    /// The encoder escapes C0 controls itself but writes DEL, the C1 controls, the line
    /// separators and the bidi overrides raw, and JSON is often read on a terminal. They can only
    /// occur inside strings, where the escape means the same character: the output is the same
    /// JSON to any parser.
    static func terminalSafeJSON(_ json: String) -> String {
        guard json.unicodeScalars.contains(where: { $0 != "\n" && TerminalSafe.needsEscape($0) }) else { return json }
        var out = String.UnicodeScalarView()
        for scalar in json.unicodeScalars {
            if scalar != "\n" && TerminalSafe.needsEscape(scalar) {
                let digits = String(scalar.value, radix: 16)
                out.append(contentsOf: ("\\u" + String(repeating: "0", count: 4 - digits.count) + digits).unicodeScalars)
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }
}
