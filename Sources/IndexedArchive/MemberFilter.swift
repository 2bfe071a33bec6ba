package import Tar

/// The names a selection gives, kept as bytes: what extraction, listing and the index's
/// selective decoding match members against.
///
/// A `Set<String>` cannot hold `"caf\u{E9}"` and `"cafe\u{301}"` together (`String` equality is
/// canonical equivalence), and asking it for one finds the other: a selection of both took one,
/// silently. Here every distinct byte string stays, and a name matches only its own bytes.
package struct MemberFilter: Sendable, Equatable {
    /// The names, distinct by bytes, in the order given.
    package let names: [String]
    /// The names without a folder's trailing `/`, for the lookup of many.
    private let exact: Set<ExactName>

    package init(_ names: some Sequence<String>) {
        var seen: Set<ExactName> = []
        var kept: [String] = []
        var exact: Set<ExactName> = []
        // Each name as given, and as GNU tar and bsdtar also read it: with runs of `/` made one
        // (`notes/drafts//` selected nothing).
        for given in names {
            for name in [given, Self.collapsed(given)] where seen.insert(ExactName(name)).inserted {
                kept.append(name)
                exact.insert(ExactName(UTF8Bytes.droppingTrailingSlash(name)))
            }
        }
        self.names = kept
        self.exact = exact
    }

    package var count: Int { names.count }

    /// `name` with each run of `/` made one, and no trailing `/`.
    package static func collapsed(_ name: String) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(name.utf8.count)
        for byte in name.utf8 where !(byte == UInt8(ascii: "/") && bytes.last == UInt8(ascii: "/")) { bytes.append(byte) }
        if bytes.count > 1, bytes.last == UInt8(ascii: "/") { bytes.removeLast() }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Whether the name given as `name` selected something, by `matched` (the names, without a
    /// trailing `/`, that selected a member): as given, or with its runs of `/` made one.
    package static func wasMatched(_ name: String, in matched: Set<ExactName>) -> Bool {
        matched.contains(ExactName(UTF8Bytes.droppingTrailingSlash(name))) || matched.contains(ExactName(collapsed(name)))
    }

    /// Whether `name` (without a folder's trailing `/`) is exactly one of the names, with or
    /// without theirs.
    package func contains(exactly name: String) -> Bool { exact.contains(ExactName(name)) }

    /// How many names there are once a folder's trailing `/` is set aside.
    package var distinctNames: Int { exact.count }

    package static func == (lhs: MemberFilter, rhs: MemberFilter) -> Bool { lhs.exact == rhs.exact }

    /// Whether `path` is one of the names (with or without a folder's trailing `/`) or lies
    /// under one of them.
    package func selects(_ path: String) -> Bool {
        guard count <= TarConsumer.fewMembers else {
            // Many names: look each of the path's ancestors up.
            var found = false
            TarConsumer.forEachAncestor(of: path) { name in
                found = contains(exactly: name)
                return !found
            }
            return found
        }
        return selects(utf8: path.utf8[...])
    }

    /// ``selects(_:)`` on a path's bytes, comparing each name in turn: without making a string
    /// for every ancestor of every member of the archive (choosing one member of a real tree's
    /// 13,890 spent a third of its CPU making them), or for the path itself (the index's names
    /// are bytes until a member is chosen). Meant for a few names (``TarConsumer/fewMembers``).
    package func selects<Path: BidirectionalCollection<UInt8>>(utf8 path: Path) -> Bool {
        let slash = UInt8(ascii: "/")
        var name = path[...]
        if name.last == slash { name = name.dropLast() }
        func under(_ target: Substring.UTF8View) -> Bool {
            guard name.starts(with: target) else { return false }
            let end = name.index(name.startIndex, offsetBy: target.count)
            return end == name.endIndex || name[end] == slash
        }
        for member in names {
            let target = Substring(member).utf8
            if under(target) || (target.last == slash && under(target.dropLast())) { return true }
        }
        return false
    }
}
