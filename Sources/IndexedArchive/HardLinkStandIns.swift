import Tar

/// Selected hard links whose target is not selected, and what extracting them writes instead.
///
/// A tar hard link has no content: it names an earlier member. Extracting the link alone, tar and
/// bsdtar fail (`Cannot hard link to 'x': No such file or directory`), and which of a file's
/// names is stored as the file and which as links depends only on the walk's order, which the
/// user neither chose nor sees. With the index, amk knows the target before the link's turn: the
/// target's content is written under the first selected link's path (the content of every name of
/// the file is the same), and further selected links to it link to that path instead.
struct HardLinkStandIns: Sendable {
    /// Target members, by header offset, to be written under this path (a selected link's).
    private(set) var renamed: [UInt64: String] = [:]
    /// Selected links, by header offset, that a renamed target writes instead.
    private(set) var replaced: Set<UInt64> = []
    /// Further selected links, by header offset, and the path they link to instead.
    private(set) var relinked: [UInt64: String] = [:]

    var isEmpty: Bool { renamed.isEmpty }

    init() {}

    /// The stand-ins for the members of `entries` (in archive order) that `selected` takes.
    ///
    /// A link names the latest member of its target's name before it, as tar resolves it; a link
    /// to something other than a regular file or a symbolic link (a file's other names, or a
    /// link's: link(2) does not follow one) is left to fail as it would.
    ///
    /// Costs a pass over `entries` only when a selected member is a hard link: choosing one member
    /// among 50,000 must not build a table of all their names.
    init(entries: [ArchiveEntry], selected: (ArchiveEntry) -> Bool) {
        // Keyed by bytes: a link to "é" must not find "e\u{301}" (``ExactName``).
        var targets = Set<ExactName>()
        for entry in entries where entry.kind == .hardLink && selected(entry) {
            // A target spelt as a folder (`d/f/`) is no file to stand in: the link fails, as in a
            // full extraction (it was given `d/f`'s content when selected alone).
            if let name = entry.linkTarget, !UTF8Bytes.endsWithSlash(name) { targets.insert(ExactName(ArchiveEntry.name(of: name))) }
        }
        guard !targets.isEmpty else { return }
        var latest: [ExactName: (entry: ArchiveEntry, selected: Bool)] = [:]
        for entry in entries {
            let name = ExactName(entry.name)
            let isSelected = (entry.kind == .hardLink || targets.contains(name)) && selected(entry)
            if entry.kind == .hardLink, isSelected, let target = entry.linkTarget, !UTF8Bytes.endsWithSlash(target),
                let target = latest[ExactName(ArchiveEntry.name(of: target))], !target.selected,
                target.entry.kind == .regular || target.entry.kind == .symbolicLink
            {
                let offset = target.entry.headerOffset
                if let path = renamed[offset] {
                    relinked[entry.headerOffset] = path
                } else {
                    renamed[offset] = entry.path
                    replaced.insert(entry.headerOffset)
                }
            }
            if targets.contains(name) { latest[name] = (entry, isSelected) }
        }
    }

    /// Whether the member at `offset` is extracted: selected and not replaced, or a target that
    /// stands in for a link.
    func extracts(at offset: UInt64, selected: Bool) -> Bool {
        selected ? !replaced.contains(offset) : renamed[offset] != nil
    }

    /// The header the extractor is given for the member at `offset`.
    func apply(to header: inout TarHeader, at offset: UInt64) {
        if let path = renamed[offset] { header.path = path }
        if let target = relinked[offset] { header.linkTarget = target }
    }
}
