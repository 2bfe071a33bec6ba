import ArgumentParser
import Foundation
import IndexedArchive
import Tar

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
        // Under too tight a `ulimit -v` a thread cannot start and the cooperative pool waits for
        // one forever: say so and stop instead of hanging.
        if let shortfall = AddressSpace.shortfall() ?? DescriptorLimit.shortfall() {
            StandardError.line("amk: \(shortfall)")
            Foundation.exit(1)
        }
        refuseArgumentsThatAreNotUTF8()
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
        var command: any ParsableCommand
        do {
            let arguments = Array(CommandLine.arguments.dropFirst())
            // Thousands of names: the names of `list` and `extract`, after `--` or not, are
            // parsed apart (see MemberArguments), and the command checked as a whole. Arguments
            // that do not parse so (the archive itself after `--`) are parsed together, as ever.
            if let (parsed, names) = MemberArguments.split(arguments), let head = try? parseAsRoot(parsed),
                let whole = MemberArguments.adding(names, to: head)
            {
                command = whole
                try command.validate()
            } else {
                command = try parseAsRoot(arguments)
            }
        } catch {
            // Everything that fails while parsing (and validating) is a usage error, except a
            // request for help or the version, which ArgumentParser also reports as an "error".
            let message = fullMessage(for: error)
            if exitCode(for: error) == .success {
                refuseHelpInACluster()
                print(message)
                Foundation.exit(StandardOutput.flushFailure().map { status(reporting: $0) } ?? 0)
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
            Foundation.exit(status(reporting: error, command: type(of: command)))
        }
        Foundation.exit(0)
    }

    /// Exits with a usage error instead of answering a help request that came from a cluster of
    /// short options: ArgumentParser reads `-dash` (a folder named so, given without `--`) or
    /// tar's `-xvhf` as short options, one of them `-h`, and answered with the help and status 0,
    /// so a script took the pack for done.
    static func refuseHelpInACluster() {
        guard let cluster = helpInACluster(CommandLine.arguments.dropFirst()) else { return }
        StandardError.line(
            usageText(
                "Error: Unknown option '\(cluster)': -h asks for help only on its own; a name that begins with '-' goes after '--'"))
        Foundation.exit(usageStatus)
    }

    /// Exits with a usage error at the first argument that is not UTF-8. `CommandLine.arguments`
    /// replaces its bad bytes with U+FFFD, so `-o` or `-C` wrote to a name that was never given,
    /// and a folder to pack that exists was "not found". A member's name that is not UTF-8 is
    /// given as `amk list` prints it, with `\xHH` escapes, which are UTF-8.
    static func refuseArgumentsThatAreNotUTF8() {
        for position in 1..<Int(CommandLine.argc) {
            guard let argument = CommandLine.unsafeArgv[position] else { continue }
            let bytes = UnsafeRawBufferPointer(start: argument, count: strlen(argument))
            guard String(validating: bytes, as: UTF8.self) == nil else { continue }
            // Shown as `amk list` shows a name that is not UTF-8: each bad byte as `\xHH`.
            StandardError.line(
                "Error: argument \(position), '\(TerminalSafe.name(RawName.decode(bytes)))', is not UTF-8: amk takes names as UTF-8 "
                    + "(a member's name that is not can be given as `amk list` prints it, with \\xHH escapes)")
            Foundation.exit(usageStatus)
        }
    }

    /// A subcommand's usage lines as ArgumentParser prints them after a usage error, taken from
    /// its help; nil for the root.
    static func usage(of command: any ParsableCommand.Type) -> String? {
        guard command != AMK.self, let name = command.configuration.commandName else { return nil }
        let help = helpMessage(for: command)
        guard let line = help.split(separator: "\n").first(where: { $0.hasPrefix("USAGE: ") }) else { return nil }
        return "Usage: \(line.dropFirst("USAGE: ".count))\n  See 'amk \(name) --help' for more information."
    }

    /// The first argument before `--` that is a cluster of short options holding `h`, when no
    /// argument asks for help on its own (`-h`, `--help`, the `help` command).
    static func helpInACluster(_ arguments: ArraySlice<String>) -> String? {
        let options = arguments.prefix { $0 != "--" }
        if options.contains(where: { $0 == "-h" || $0 == "--help" }) || options.first == "help" { return nil }
        return options.first { $0.utf8.count > 2 && $0.hasPrefix("-") && !$0.hasPrefix("--") && $0.dropFirst().contains("h") }
    }

    /// Prints what went wrong and returns the exit status.
    ///
    /// Not every error here is a failure of the work: `amk --help` parses to ArgumentParser's
    /// help command, whose `run()` throws the help request, so ArgumentParser classifies first.
    static func status(reporting error: any Error, command: (any ParsableCommand.Type)? = nil) -> Int32 {
        if let code = error as? ExitCode { return code.rawValue }
        switch exitCode(for: error) {
        case .success:
            refuseHelpInACluster()
            print(fullMessage(for: error))
            return StandardOutput.flushFailure().map { status(reporting: $0) } ?? 0
        case .validationFailure:
            if let command, let validation = error as? ValidationError, let usage = usage(of: command) {
                // Thrown by a command's `run()`, which ArgumentParser cannot place: its message
                // carries the root's usage ("amk <subcommand>"), not the command's.
                StandardError.line(usageText("Error: \(validation.message)\n\(usage)"))
            } else {
                StandardError.line(usageText(fullMessage(for: error)))
            }
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
