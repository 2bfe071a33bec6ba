import ArgumentParser
import IndexedArchive

/// `amk pack --sort`: the engine's ``WalkOrder`` as an argument (a type of this module, so that
/// the engine does not depend on the argument parser).
enum MemberOrder: String, CaseIterable, ExpressibleByArgument, Sendable {
    case type
    case name

    var walkOrder: WalkOrder {
        switch self {
        case .type: .type
        case .name: .name
        }
    }
}
