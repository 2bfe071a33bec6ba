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
        abstract: "List the members of an archive.",
        discussion: """
            An archive with an amk index is listed from the index alone, without decompressing; \
            any other .tar.xz, and one read from a pipe (`-`), is read through once.

            Examples:
              amk list app.tar.xz
              amk list -l app.tar.xz
              amk list --json app.tar.xz | jq -r '.[] | select(.type == "file") | .path'
              curl -s https://example.com/app.tar.xz | amk list -
            """
    )

    @Argument(help: ArgumentHelp("The archive to list; - reads standard input.", valueName: "archive"), completion: .file())
    var archive: String

    @Flag(name: [.short, .long], help: "Show mode, size and modification time, like tar -tv.")
    var long = false

    @Flag(name: [.customShort("v"), .customLong("verbose")], help: "The same as --long (tar's -tv).")
    var verbose = false

    @Flag(help: "Print a JSON array of objects (path, type, size, mode, uid, gid, mtime, linkTarget).")
    var json = false

    func validate() throws {
        if (long || verbose) && json {
            throw ValidationError("--long and --json cannot be used together.")
        }
    }

    func run() async throws {
        let argument = archive
        let entries = try await SignalCancellation.run {
            switch try await ArchiveInput.resolve(argument) {
            case .file(let path): try await ArchiveReader.open(path: path).entries()
            case .stream(let fd, _): try await ArchiveStreamReader.scan(from: fd).entries
            }
        }
        if json {
            try JSONOutput.print(entries.map(ListedEntry.init))
        } else {
            // One write for the whole listing: a print per line costs a lock and a call each,
            // which for thousands of members is most of what listing from the index takes.
            let listing = long || verbose ? LongListing(entries: entries) : nil
            var out = ""
            out.reserveCapacity(entries.count * 64)
            for entry in entries {
                out += listing?.line(for: entry) ?? TerminalSafe.name(entry.path)
                out += "\n"
            }
            print(out, terminator: "")
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
