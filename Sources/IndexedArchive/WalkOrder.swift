import Tar

/// The order in which a pack walks the names of each folder, and so the order of the members in
/// the tar stream.
///
/// Either way a folder's members stay together, right after the folder itself, as `tar` writes
/// them: GNU tar sets a folder's time and mode when it meets a member outside it, and bsdtar run
/// without `-p` keeps the mode of a folder it had to create for a member that came first, so an
/// order that left a folder and came back, or put a folder after its contents, would extract a
/// different tree with one of them.
public enum WalkOrder: String, Sendable, Hashable, CaseIterable {
    /// Names sorted bytewise (`ls` in the C locale).
    case name
    /// Names grouped by extension (compared without case), then sorted bytewise within a group;
    /// names without an extension first. The default.
    ///
    /// Files of one kind compress better side by side: LZMA finds their common structure within
    /// a short distance, and its literal coder adapts to the bytes it has just seen. 7-Zip
    /// orders its solid blocks by extension for the same reason. Measured with amk's defaults,
    /// 50,000 small text files of six kinds (smallfiles) pack 1.5% smaller than in name order, a
    /// 364 MiB copy of `/usr/share/doc`, `/usr/include` and a Swift toolchain's libraries, whose
    /// folders mostly hold one kind each, 0.16% smaller, in the same time (issue #12). Grouping
    /// across folders gained more on the small files (5%) but cannot keep a folder's members
    /// together (see above), so it is not done.
    case type

    /// Puts the names of one folder, sorted bytewise as ``FileSystem/listDirectory`` returns
    /// them, in this order.
    func arrange(_ names: inout [String]) {
        switch self {
        case .name:
            return
        case .type:
            var keyed = names.map { name -> (type: [UInt8], name: [UInt8], original: String) in
                let bytes = RawName.encode(name)
                return (Self.type(of: bytes), bytes, name)
            }
            keyed.sort { left, right in
                left.type == right.type
                    ? left.name.lexicographicallyPrecedes(right.name) : left.type.lexicographicallyPrecedes(right.type)
            }
            names = keyed.map(\.original)
        }
    }

    /// The extension of a name, lower-cased (ASCII): the bytes after its last dot, none when the
    /// only dot starts the name (`.profile`) or ends it.
    static func type(of name: [UInt8]) -> [UInt8] {
        guard let dot = name.lastIndex(of: UInt8(ascii: ".")), dot > 0 else { return [] }
        return name[(dot + 1)...].map { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) ? $0 | 0x20 : $0 }
    }
}
