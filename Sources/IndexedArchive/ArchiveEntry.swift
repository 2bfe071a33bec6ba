public import Tar

/// A member of an archive, as its index records it.
public struct ArchiveEntry: Sendable, Hashable {
    /// The path as stored in the tar stream; directories end in `/`.
    public var path: String
    /// Regular file, directory, symbolic or hard link.
    public var kind: TarEntryKind
    /// Content bytes (0 for directories and links).
    public var size: UInt64
    /// Permission bits, set-id and sticky bits included.
    public var mode: UInt32
    /// Owner's user id.
    public var uid: UInt64
    /// Owner's group id.
    public var gid: UInt64
    /// Modification time, to the nanosecond (the tar header holds whole seconds; the index the rest).
    public var mtime: TarTimestamp
    /// Target of a symbolic or hard link.
    public var linkTarget: String?
    /// Offset in the tar stream of the member's first header block (its pax header, if any).
    public var headerOffset: UInt64
    /// Offset in the tar stream of its first content byte.
    public var dataOffset: UInt64
    /// CRC64 of the content, for regular files in an indexed archive.
    public var checksum: UInt64?
    /// Whether a pax extended header precedes the ustar header.
    public var hasPaxHeader: Bool

    /// An entry with every field given, as the index and the tar parser make them.
    public init(
        path: String, kind: TarEntryKind, size: UInt64, mode: UInt32, uid: UInt64, gid: UInt64,
        mtime: TarTimestamp, linkTarget: String?, headerOffset: UInt64, dataOffset: UInt64,
        checksum: UInt64?, hasPaxHeader: Bool
    ) {
        self.path = path
        self.kind = kind
        self.size = size
        self.mode = mode
        self.uid = uid
        self.gid = gid
        self.mtime = mtime
        self.linkTarget = linkTarget
        self.headerOffset = headerOffset
        self.dataOffset = dataOffset
        self.checksum = checksum
        self.hasPaxHeader = hasPaxHeader
    }

    /// The path without the trailing `/` of a directory, as users type it.
    public var name: String { Self.name(of: path) }

    /// `path` without a folder's trailing `/`, as ``name`` gives it and hard links name a member.
    static func name(of path: String) -> String {
        path.utf8.count > 1 ? UTF8Bytes.droppingTrailingSlash(path) : path
    }
}
