import ArgumentParser

/// What the benchmark packs: a generated corpus or a directory given by the user.
enum CorpusKind: ExpressibleByArgument, CustomStringConvertible, Equatable {
    case appdata
    case smallfiles
    case directory(String)

    init?(argument: String) {
        switch argument {
        case "appdata": self = .appdata
        case "smallfiles": self = .smallfiles
        default: self = .directory(argument)
        }
    }

    var description: String {
        switch self {
        case .appdata: "appdata"
        case .smallfiles: "smallfiles"
        case .directory(let path): path
        }
    }

    static var allValueStrings: [String] { ["appdata", "smallfiles"] }
}
