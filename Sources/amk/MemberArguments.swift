import ArgumentParser
import Foundation
import IndexedArchive

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

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
        guard let command = arguments.first, commands.contains(command) else { return nil }
        guard let separator = arguments.firstIndex(of: "--") else { return splitWithoutSeparator(arguments) }
        guard separator + 1 < arguments.count else { return nil }
        return (Array(arguments[...separator]), Array(arguments[(separator + 1)...]))
    }

    /// The same split for names given without `--` (`amk extract A $(cat names)`), the way most
    /// scripts pass them: the options, wherever they stand, and the archive go to ArgumentParser
    /// with a `--` after them, and the other positional arguments are the names. Only an argument
    /// line that reads one way is split: every argument that starts with `-` must be one of the
    /// command's own options or flags, spelled as it declares them (`--name=value` too), and an
    /// option's value must not itself look like an option. Anything else (a cluster of short
    /// flags, an unknown option, a missing value) is nil, and the whole line is parsed as it
    /// always was, with its usual message.
    static func splitWithoutSeparator(_ arguments: [String]) -> (parsed: [String], names: [String])? {
        guard let command = arguments.first, let spelling = OptionSpelling.of(command) else { return nil }
        var options: [String] = []
        var positionals: [String] = []
        var index = 1
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            guard argument.hasPrefix("-"), argument != "-" else {
                positionals.append(argument)
                continue
            }
            options.append(argument)
            if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
                guard spelling.takingValues.contains(String(argument[..<equals])) else { return nil }
                continue
            }
            if spelling.flags.contains(argument) { continue }
            guard spelling.takingValues.contains(argument), index < arguments.count else { return nil }
            let value = arguments[index]
            guard value == "-" || !value.hasPrefix("-") else { return nil }
            options.append(value)
            index += 1
        }
        guard positionals.count > 1 else { return nil }
        return ([command] + options + [positionals[0], "--"], Array(positionals.dropFirst()))
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
    /// Why a file of names or patterns could not be read, in the system's words.
    struct ReadFailure: Error {
        var reason: String
    }

    /// The whole of the file at `path`, or of standard input for `-`, read with the system's
    /// calls, which take a device (`-T /dev/null`) or a FIFO as well and say what failed in the
    /// words of `errno`: Foundation's handle said "The operation could not be completed.
    /// (NSCocoaErrorDomain error 256.)" for a closed standard input.
    static func readAll(_ path: String) throws(ReadFailure) -> [UInt8] {
        var fd = STDIN_FILENO
        if path != "-" {
            repeat { fd = open(path, O_RDONLY | O_CLOEXEC) } while fd < 0 && errno == EINTR
        }
        guard fd >= 0 else { throw ReadFailure(reason: String(cString: strerror(errno))) }
        defer { if fd != STDIN_FILENO { close(fd) } }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = buffer.withUnsafeMutableBytes { readSome(fd, $0) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw ReadFailure(reason: String(cString: strerror(errno))) }
            if count == 0 { return bytes }
            bytes.append(contentsOf: buffer[0..<count])
        }
    }

    static func read(from path: String) throws -> [String] {
        var isFolder: ObjCBool = false
        if path != "-", FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), isFolder.boolValue {
            // Said as such: it was "The operation could not be completed (NSCocoaErrorDomain error 256)".
            throw ValidationError("cannot read the member names in '\(TerminalSafe.name(path))': it is a folder, not a file of names")
        }
        let data: [UInt8]
        do {
            data = try readAll(path)
        } catch {
            throw ValidationError("cannot read the member names in '\(TerminalSafe.name(path))': \(error.reason)")
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

/// `read(2)`, which inside ``MemberArguments`` a method of the same name hides.
private func readSome(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer) -> Int {
    read(fd, buffer.baseAddress, buffer.count)
}
