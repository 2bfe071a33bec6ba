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

    @Flag(inversion: .prefixedNo, help: "Show a progress bar on standard error (default: only when it is a terminal).")
    var progress: Bool?

    func validate() throws {
        if quiet && json { throw ValidationError("--quiet and --json cannot be used together.") }
    }

    func run() async throws {
        let argument = archive
        let showProgress = progress ?? StandardError.isTerminal
        let outcome: (count: Int, mode: String, unchecked: Bool)
        do {
            outcome = try await SignalCancellation.run {
                switch try await ArchiveInput.resolve(argument) {
                case .file(let path):
                    let reader = try await ListCommand.opened(path)
                    // The bar counts tar bytes: the index gives their total, the xz Index at
                    // least the decompressed size.
                    let bar = showProgress ? ProgressBar(label: "verifying", total: try await Self.total(reader)) : nil
                    defer { bar?.finish() }
                    let count = try await reader.verify(onProgress: Self.reporter(bar))
                    return (count, reader.mode == .indexed ? "indexed" : "sequential", reader.isUnchecked)
                case .stream(let fd, _):
                    let bar = showProgress ? ProgressBar(label: "verifying", total: 0) : nil
                    defer { bar?.finish() }
                    let result = try await ArchiveStreamReader.scan(from: fd, keepingEntries: false, onProgress: Self.reporter(bar))
                    return (result.members, result.indexVerified ? "stream-indexed" : "stream", result.isUnchecked)
                }
            }
        } catch let error as ArchiveError where json {
            // A script asked for JSON: it gets the failure as JSON too (and the usual line on
            // standard error, and exit status 1).
            try JSONOutput.print(
                VerifyReport(archive: argument, ok: false, members: nil, mode: nil, contentChecked: nil, error: error.description))
            throw error
        }
        if outcome.unchecked {
            // xz -t says nothing either; but "verified" would claim what no check stood behind.
            StandardError.line(
                "amk: warning: \(TerminalSafe.name(argument)): the xz stream carries no integrity check (check type None): "
                    + "the members' headers were checked, their content could not be")
        }
        if json {
            try JSONOutput.print(
                VerifyReport(
                    archive: argument, ok: true, members: outcome.count, mode: outcome.mode, contentChecked: !outcome.unchecked,
                    error: nil))
        } else if !quiet {
            print(
                "OK: \(outcome.count) \(outcome.count == 1 ? "member" : "members") verified"
                    + (outcome.unchecked ? " (headers only: the archive carries no integrity check)" : ""))
        }
    }
}

extension VerifyCommand {
    /// The tar bytes a verification goes through, or 0 when the archive cannot tell.
    static func total(_ reader: ArchiveReader) async throws -> UInt64 {
        do {
            let info = try await reader.info()
            return info.tarSize ?? info.uncompressedSize
        } catch is ArchiveError {
            // No readable xz Index: verify will report the damage; the bar goes without a total.
            return 0
        }
    }

    static func reporter(_ bar: ProgressBar?) -> (@Sendable (UInt64) -> Void)? {
        guard let bar else { return nil }
        return { bar.update(completed: $0) }
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
    /// False when the archive carries no integrity check (xz check type None): the members'
    /// headers were checked, their content could not be; null on failure.
    @AlwaysPresent var contentChecked: Bool?
    /// The first problem, as the error line on standard error gives it; null on success.
    @AlwaysPresent var error: String?
}
