package import Tar

/// Members chosen by name as extraction chooses them (``ExtractOptions/members``): a name selects
/// the member of that name, with or without a folder's trailing `/`, and everything under it.
///
/// `amk list A NAME…` lists what `amk extract A NAME…` would write, and reports the names that
/// select nothing as extraction does, with the same rule.
public struct MemberSelection: Sendable {
    /// The names, as stored in the archive (not escaped). Of two canonically equivalent names,
    /// which `Set<String>` holds as one, the selection still matches both.
    public var names: Set<String> { Set(filter.names) }
    /// The names as bytes (``MemberFilter``).
    package let filter: MemberFilter
    /// The names as given, distinct by bytes, in their order: what ``unmatched(matched:)`` names.
    private let given: [String]

    public init(_ names: some Sequence<String>) {
        let names = Array(names)
        self.filter = MemberFilter(names)
        var seen = Set<ExactName>()
        self.given = names.filter { seen.insert(ExactName($0)).inserted }
    }

    /// The names given that select none of the members whose names ``record(_:into:)`` put in
    /// `matched`, once each, in the order given.
    package func unmatched(matched: Set<ExactName>) -> [String] {
        var reported = Set<ExactName>()
        return given.filter { name in
            !MemberFilter.wasMatched(name, in: matched)
                && reported.insert(ExactName(UTF8Bytes.droppingTrailingSlash(name))).inserted
        }
    }

    /// Whether one of the names is `path` or a folder above it.
    public func selects(_ path: String) -> Bool {
        filter.selects(path)
    }

    /// Adds to `matched` the names that select `path` (it, or a folder above it): over the members
    /// reached, what is not in `matched` selected nothing.
    package func record(_ path: String, into matched: inout Set<ExactName>) {
        guard matched.count < filter.distinctNames else { return }
        TarConsumer.forEachAncestor(of: path) { name in
            if filter.contains(exactly: name) { matched.insert(ExactName(name)) }
            return true
        }
    }

    /// The names that select none of `paths`, in `order` (the order they were given in).
    ///
    /// One pass over the paths, looking each path's ancestors up among the names: linear in the
    /// members however many names there are.
    public func unmatched(in paths: some Sequence<String>, order: [String]) -> [String] {
        var matched = Set<ExactName>()
        for path in paths where matched.count < filter.distinctNames {
            TarConsumer.forEachAncestor(of: path) { name in
                if filter.contains(exactly: name) { matched.insert(ExactName(name)) }
                return true
            }
        }
        var reported = Set<ExactName>()
        return order.filter { !MemberFilter.wasMatched($0, in: matched) && reported.insert(ExactName($0)).inserted }
    }
}
