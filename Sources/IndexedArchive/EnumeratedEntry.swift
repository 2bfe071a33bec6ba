public import Tar

/// One file system object found by ``DirectoryEnumerator``, with what `lstat` said of it.
public struct EnumeratedEntry: Sendable, Hashable {
    /// Where it is on disk.
    public var sourcePath: String
    /// Its path in the archive (no trailing slash).
    public var archivePath: String
    /// Regular file, directory or symbolic link; the enumerator skips the kinds tar cannot restore.
    public var kind: TarEntryKind
    /// Content bytes for a regular file, 0 otherwise.
    public var size: UInt64
    /// Permission bits, including set-id and sticky bits.
    public var mode: UInt32
    /// Owner's user id.
    public var uid: UInt64
    /// Owner's group id.
    public var gid: UInt64
    /// Modification time, to the nanosecond.
    public var mtime: TarTimestamp
    /// The target of a symbolic link, as stored in the link.
    public var linkTarget: String?
    /// Device and inode, which identify hard links.
    public var device: UInt64
    /// The inode number (with ``device``, what identifies hard links).
    public var inode: UInt64
    /// Hard links to this inode.
    public var linkCount: UInt64
    /// Extended attributes, when the enumeration reads them (``PackOptions/storeExtendedAttributes``),
    /// sorted by the bytes of their names. Names are distinct as bytes, so two that differ only in
    /// Unicode normalization are both here.
    public var extendedAttributeList: [ExtendedAttribute] = []
    /// The POSIX access ACL as text, when the enumeration reads ACLs
    /// (``PackOptions/storeAccessControlLists``) and the file has one that says more than its mode.
    public var accessACL: String?
    /// A folder's default ACL as text, when the enumeration reads ACLs.
    public var defaultACL: String?

    /// The extended attributes as a dictionary from name to value. Names that differ only in
    /// Unicode normalization are one `String` key, which keeps one of their values;
    /// ``extendedAttributeList`` keeps them all. Setting this replaces the list.
    public var extendedAttributes: [String: [UInt8]] {
        get { extendedAttributeList.byName }
        set { extendedAttributeList = [ExtendedAttribute](newValue) }
    }
}
