import IndexedArchive
import Tar

/// One member as `amk list --json` prints it.
///
/// Every object has every key (`linkTarget` is `null` when there is none), so a consumer can index
/// fields without checking for their presence. `mode` is an octal string because that is how
/// permissions are read and written everywhere else.
struct ListedEntry: Encodable {
    var path: String
    /// `file`, `directory`, `symlink`, `hardlink`, `character-device`, `block-device`, `fifo`, or
    /// `other`.
    var type: String
    var size: UInt64
    var mode: String
    var uid: UInt64
    var gid: UInt64
    /// Seconds since 1970, with the fraction the archive keeps.
    var mtime: Double
    var linkTarget: String?

    init(_ entry: ArchiveEntry) {
        path = entry.path
        type = ListedEntry.typeName(entry.kind)
        size = entry.size
        // Four digits, as `stat -c %04a` prints them: "0644", "4755", "0000" (a "0" put before
        // the digits made "04755" of one and "00" of another).
        let digits = String(entry.mode & 0o7777, radix: 8)
        mode = String(repeating: "0", count: max(0, 4 - digits.count)) + digits
        uid = entry.uid
        gid = entry.gid
        mtime = Double(entry.mtime.seconds) + Double(entry.mtime.nanoseconds) / 1e9
        linkTarget = entry.linkTarget
    }

    private enum CodingKeys: String, CodingKey {
        case path, type, size, mode, uid, gid, mtime, linkTarget
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(path, forKey: .path)
        try container.encode(type, forKey: .type)
        try container.encode(size, forKey: .size)
        try container.encode(mode, forKey: .mode)
        try container.encode(uid, forKey: .uid)
        try container.encode(gid, forKey: .gid)
        try container.encode(mtime, forKey: .mtime)
        if let linkTarget {
            try container.encode(linkTarget, forKey: .linkTarget)
        } else {
            try container.encodeNil(forKey: .linkTarget)
        }
    }

    static func typeName(_ kind: TarEntryKind) -> String {
        switch kind {
        case .regular: "file"
        case .directory: "directory"
        case .symbolicLink: "symlink"
        case .hardLink: "hardlink"
        case .characterDevice: "character-device"
        case .blockDevice: "block-device"
        case .fifo: "fifo"
        case .other: "other"
        }
    }
}
