import ArgumentParser
import Foundation

/// How a command's options are spelled, from ArgumentParser's own description of the command, so
/// that the list cannot fall behind an option added later.
struct OptionSpelling {
    /// `-C`, `--directory`: names whose next argument is their value.
    var takingValues: Set<String> = []
    /// `-q`, `--json`: names that stand alone.
    var flags: Set<String> = []

    /// The spelling of the member-taking command named `command`; nil for any other, or when
    /// the description cannot be read.
    static func of(_ command: String) -> OptionSpelling? {
        switch command {
        case ListCommand.configuration.commandName: return list
        case ExtractCommand.configuration.commandName: return extract
        default: return nil
        }
    }

    private static let list = OptionSpelling(describing: ListCommand.self)
    private static let extract = OptionSpelling(describing: ExtractCommand.self)

    /// Reads the JSON that `--experimental-dump-help` prints. Nil when an argument is parsed
    /// otherwise than one value at a time (`.remaining`, `.upToNextOption`) or the description
    /// cannot be read: then nothing is split.
    init?(describing command: any ParsableCommand.Type) {
        struct Name: Decodable {
            var kind: String
            var name: String
        }
        struct Argument: Decodable {
            var kind: String
            var names: [Name]?
            var parsingStrategy: String?
        }
        struct Command: Decodable { var arguments: [Argument]? }
        struct Tool: Decodable { var command: Command }
        guard let tool = try? JSONDecoder().decode(Tool.self, from: Data(command._dumpHelp().utf8)) else { return nil }
        for argument in tool.command.arguments ?? [] {
            let spelled = (argument.names ?? []).map { ($0.kind == "long" ? "--" : "-") + $0.name }
            let takesOneValue = argument.parsingStrategy == nil || argument.parsingStrategy == "default"
            switch argument.kind {
            case "positional" where takesOneValue: continue
            case "flag": flags.formUnion(spelled)
            case "option" where takesOneValue: takingValues.formUnion(spelled)
            default: return nil
            }
        }
    }
}
