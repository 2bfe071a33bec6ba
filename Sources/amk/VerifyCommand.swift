import ArgumentParser
import IndexedArchive

/// `amk verify A`: decodes every block, checks every block check and member checksum, and
/// compares the tar stream with the index. Writes nothing. `-` reads standard input in one pass.
struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check an archive's integrity without extracting it.",
        discussion: """
            Exits 0 and prints 'OK: N members verified', or prints the first problem (with its \
            offset) and exits 1.

            Examples:
              amk verify app.tar.xz
              amk verify -q app.tar.xz && echo intact
              ssh host cat app.tar.xz | amk verify -
              amk verify --json app.tar.xz
            """
    )

    @Argument(help: ArgumentHelp("The archive to verify; - reads standard input.", valueName: "archive"), completion: .file())
    var archive: String

    @Flag(name: [.short, .long], help: "Print nothing on success: the exit status says it all.")
    var quiet = false

    @Flag(help: "Print the result as a JSON object, failures included (see README, \"JSON output\").")
    var json = false

    func validate() throws {
        if quiet && json { throw ValidationError("--quiet and --json cannot be used together.") }
    }

    func run() async throws {
        let argument = archive
        let outcome: (count: Int, mode: String)
        do {
            outcome = try await SignalCancellation.run {
                switch try await ArchiveInput.resolve(argument) {
                case .file(let path):
                    let reader = try await ArchiveReader.open(path: path)
                    return (try await reader.verify(), reader.mode == .indexed ? "indexed" : "sequential")
                case .stream(let fd, _):
                    let result = try await ArchiveStreamReader.scan(from: fd)
                    return (result.entries.count, result.indexVerified ? "stream-indexed" : "stream")
                }
            }
        } catch let error as ArchiveError where json {
            // A script asked for JSON: it gets the failure as JSON too (and the usual line on
            // standard error, and exit status 1).
            try JSONOutput.print(VerifyReport(archive: argument, ok: false, members: nil, mode: nil, error: error.description))
            throw error
        }
        if json {
            try JSONOutput.print(VerifyReport(archive: argument, ok: true, members: outcome.count, mode: outcome.mode, error: nil))
        } else if !quiet {
            print("OK: \(outcome.count) \(outcome.count == 1 ? "member" : "members") verified")
        }
    }
}

/// `amk verify --json`.
struct VerifyReport: Encodable {
    var archive: String
    var ok: Bool
    /// Members verified; null on failure.
    @AlwaysPresent var members: Int?
    /// `indexed` (checked against the amk index), `sequential` (a .tar.xz without one),
    /// `stream-indexed` or `stream` (read from a pipe, with or without the index); null on failure.
    @AlwaysPresent var mode: String?
    /// The first problem, as the error line on standard error gives it; null on success.
    @AlwaysPresent var error: String?
}
