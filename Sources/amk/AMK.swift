import ArgumentParser
import Foundation
import IndexedArchive

/// `amk`: pack, inspect and extract indexed `.tar.xz` archives, and run app migrations.
///
/// Exit status: 0 success, 1 failure (including an interruption by Ctrl-C, SIGTERM or SIGHUP), 2 usage
/// error. ArgumentParser's own `main()` exits with 64 (`EX_USAGE`) for usage errors and prints
/// runtime errors with an `Error:` prefix, so the root command brings its own ``main()``.
@main
struct AMK: AsyncParsableCommand {
    /// Exit status for a runtime failure.
    static let failureStatus: Int32 = 1
    /// Exit status for bad command-line input.
    static let usageStatus: Int32 = 2

    /// The subcommands, in the order `amk --help` lists them. New commands are added here.
    static let commands: [any ParsableCommand.Type] = [
        PackCommand.self,
        ListCommand.self,
        ExtractCommand.self,
        VerifyCommand.self,
        InfoCommand.self,
        SalvageCommand.self,
        ExportCommand.self, ImportCommand.self, DemoCommand.self,
        SendCommand.self, ReceiveCommand.self, LegacySweepCommand.self, StallCommand.self
    ]

    static let configuration = CommandConfiguration(
        commandName: "amk",
        abstract: "Pack, inspect and extract indexed .tar.xz archives, and run app migrations.",
        discussion: """
            Exit status: 0 on success, 1 on failure or interruption, 2 for a usage error. \
            An archive argument of - is standard input (standard output for pack -o -).

            Examples:
              amk pack ~/src/app -o app.tar.xz
              amk list app.tar.xz
              amk extract app.tar.xz -C ~/restore
              amk pack app -o - | amk list -

            See 'amk help <subcommand>' for each command's options and examples, and \
            'amk --generate-completion-script bash|zsh|fish' for shell completion.
            """,
        version: ArchivePacker.writerVersion,
        subcommands: commands
    )

    /// `amk` alone: a script that forgot its subcommand should fail, not succeed with help text.
    func run() async throws {
        StandardError.line(AMK.helpMessage())
        throw ExitCode(AMK.usageStatus)
    }

    /// Parses the command line, runs the chosen command and maps every outcome to an exit status.
    static func main() async {
        // The CLI's choice, process-wide: large buffers in mappings of their own (see AllocatorTuning).
        AllocatorTuning.apply()
        if let archive = ListCommand.plainArchive(in: CommandLine.arguments) {
            do {
                if try !ListCommand.listIndexedFileBlocking(archive) {
                    try await ListCommand.list(archive, long: false, json: false)
                }
                if let failure = StandardOutput.flushFailure() { throw failure }
            } catch {
                Foundation.exit(status(reporting: error))
            }
            Foundation.exit(0)
        }
        let command: any ParsableCommand
        do {
            command = try parseAsRoot()
        } catch {
            // Everything that fails while parsing (and validating) is a usage error, except a
            // request for help or the version, which ArgumentParser also reports as an "error".
            let message = fullMessage(for: error)
            if exitCode(for: error) == .success {
                print(message)
                Foundation.exit(StandardOutput.flushFailure().map(status(reporting:)) ?? 0)
            }
            StandardError.line(usageText(message))
            Foundation.exit(usageStatus)
        }
        do {
            var command = command
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            if let failure = StandardOutput.flushFailure() { throw failure }
        } catch {
            Foundation.exit(status(reporting: error))
        }
        Foundation.exit(0)
    }

    /// Prints what went wrong and returns the exit status.
    ///
    /// Not every error here is a failure of the work: `amk --help` parses to ArgumentParser's
    /// help command, whose `run()` throws the help request, so ArgumentParser classifies first.
    static func status(reporting error: any Error) -> Int32 {
        if let code = error as? ExitCode { return code.rawValue }
        switch exitCode(for: error) {
        case .success:
            print(fullMessage(for: error))
            return StandardOutput.flushFailure().map(status(reporting:)) ?? 0
        case .validationFailure:
            StandardError.line(usageText(fullMessage(for: error)))
            return usageStatus
        default:
            // A runtime failure: one line, not ArgumentParser's "Error: " and usage text.
            StandardError.line("amk: \(describe(error))")
            return failureStatus
        }
    }

    /// A usage error as ArgumentParser words it, each line escaped: it quotes the offending
    /// argument, which may be a file name that a shell glob picked up (`amk list *`).
    static func usageText(_ message: String) -> String {
        message.split(separator: "\n", omittingEmptySubsequences: false)
            .map { TerminalSafe.message(String($0)) }
            .joined(separator: "\n")
    }

    /// One line for a person. `ArchiveError` names its file, member and offset itself, escaped.
    ///
    /// Other errors quote paths, a peer's words or an `ArchiveError`'s description (already
    /// escaped): ``TerminalSafe/message(_:)`` neutralises what they quote raw without escaping
    /// twice what is already escaped.
    static func describe(_ error: any Error) -> String {
        switch error {
        case let error as ArchiveError: return error.description
        case let error as InterruptedError: return error.description
        case is CancellationError: return "cancelled"
        case let error as any CustomStringConvertible: return TerminalSafe.message(error.description)
        default: return TerminalSafe.message(error.localizedDescription)
        }
    }
}
