import ArgumentParser
import Foundation
import IndexedArchive

/// The member names `list` and `extract` take, however many: after `--`, and from a file
/// (`--files-from`, tar's `-T`).
///
/// ArgumentParser's parsing takes time in the square of the number of arguments (it copies a set
/// of the arguments' origins for each one it consumes): 20,000 names, well within `ARG_MAX`,
/// took 47 s before anything was opened. The names after `--` are positional whatever they
/// look like, so they are taken out before parsing and handed to the command after it.
enum MemberArguments {
    /// The commands whose last positional arguments are member names.
    static let commands: Set<String> = [ListCommand.configuration.commandName!, ExtractCommand.configuration.commandName!]

    /// `arguments` (without the program's name) split at the first `--` when they start with a
    /// command that takes members: what ArgumentParser is given (the `--` kept, so that parsing
    /// is as before), and the names after it. Nil for anything else.
    static func split(_ arguments: [String]) -> (parsed: [String], names: [String])? {
        guard let command = arguments.first, commands.contains(command),
            let separator = arguments.firstIndex(of: "--"), separator + 1 < arguments.count
        else { return nil }
        return (Array(arguments[...separator]), Array(arguments[(separator + 1)...]))
    }

    /// `command` with `names` added after the members it was given.
    static func adding(_ names: [String], to command: any ParsableCommand) -> (any ParsableCommand)? {
        switch command {
        case var list as ListCommand:
            list.members += names
            return list
        case var extract as ExtractCommand:
            extract.members += names
            return extract
        default:
            return nil
        }
    }

    /// The names in the file at `path` (`-` for standard input), one a line as `amk list` prints
    /// them; empty lines are skipped, and a carriage return before the newline is dropped.
    static func read(from path: String) throws -> [String] {
        let data: Data
        do {
            // A handle, not Data(contentsOf:), which refuses a device (`-T /dev/null`) or a FIFO.
            let handle = path == "-" ? FileHandle.standardInput : try FileHandle(forReadingFrom: URL(filePath: path))
            data = try handle.readToEnd() ?? Data()
        } catch {
            throw ValidationError("cannot read the member names in '\(path)': \((error as NSError).localizedDescription)")
        }
        guard let text = String(validating: data, as: UTF8.self) else {
            throw ValidationError("the member names in '\(path)' are not UTF-8: give names as `amk list` prints them")
        }
        // "\r\n" is one Character: splitting at "\n" alone left such a line whole.
        return text.split(omittingEmptySubsequences: true, whereSeparator: { $0 == "\n" || $0 == "\r\n" }).compactMap { line in
            let name = line.hasSuffix("\r") ? line.dropLast() : line
            return name.isEmpty ? nil : String(name)
        }
    }
}
