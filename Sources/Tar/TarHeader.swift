/// One member's metadata, as stored and as decoded.
///
/// The same value describes a member to ``TarEncoder`` and comes back from ``TarParser``; for
/// any header the encoder accepts, decoding its output gives back an equal header (with the
/// directory slash added and `mode` limited to `0o7777`, as noted below).
public struct TarHeader: Sendable, Equatable {
    /// The archive path. Directories end in `"/"`; the encoder adds it if missing and the
    /// decoder guarantees it.
    public var path: String
    /// What the member is.
    public var kind: TarEntryKind
    /// The number of content bytes that follow the header (0 for directories and links).
    public var size: UInt64
    /// Permission bits including set-user-ID, set-group-ID and sticky (`& 0o7777`).
    public var mode: UInt32
    /// The numeric owner.
    public var uid: UInt64
    /// The numeric group.
    public var gid: UInt64
    /// The modification time.
    public var mtime: TarTimestamp
    /// The symbolic-link target, or for a hard link the archive path of the member it links to.
    /// `nil` for every other kind.
    public var linkTarget: String?
    /// The owner's name, if recorded. An empty name is the same as none.
    public var userName: String?
    /// The group's name, if recorded. An empty name is the same as none.
    public var groupName: String?
    /// The device major number, for character and block devices.
    public var deviceMajor: UInt32
    /// The device minor number, for character and block devices.
    public var deviceMinor: UInt32
    /// Extended attributes, in the order they are stored as pax `SCHILY.xattr.<name>` records (as
    /// GNU tar `--xattrs` and bsdtar write them). Names are distinct as bytes; they must not be
    /// empty or contain NUL (`=` and `%` are escaped as GNU tar escapes them). Empty unless set.
    public var extendedAttributeList: [ExtendedAttribute] = []
    /// The member's POSIX.1e access ACL, as text, from a pax `SCHILY.acl.access` record: the form
    /// GNU tar (`--acls`, one entry a line, named users and groups by name) and bsdtar (entries
    /// separated by commas, a named entry's number after its permissions) write. Nil without one.
    public var accessACL: String?
    /// A folder's default ACL, from `SCHILY.acl.default`, in the same forms as ``accessACL``.
    public var defaultACL: String?

    /// The extended attributes as a dictionary from name to value.
    ///
    /// Two names that differ only in Unicode normalization (`user.café` precomposed and with a
    /// combining accent) are one `String` key: reading keeps the later one's value, so a header
    /// that holds both shows one here. ``extendedAttributeList`` keeps every attribute. Setting
    /// this replaces the list, sorted by the bytes of the names.
    public var extendedAttributes: [String: [UInt8]] {
        get { extendedAttributeList.byName }
        set { extendedAttributeList = [ExtendedAttribute](newValue) }
    }

    /// Creates a header.
    public init(
        path: String,
        kind: TarEntryKind,
        size: UInt64 = 0,
        mode: UInt32 = 0o644,
        uid: UInt64 = 0,
        gid: UInt64 = 0,
        mtime: TarTimestamp = .init(seconds: 0),
        linkTarget: String? = nil,
        userName: String? = nil,
        groupName: String? = nil,
        deviceMajor: UInt32 = 0,
        deviceMinor: UInt32 = 0
    ) {
        self.path = path
        self.kind = kind
        self.size = size
        self.mode = mode
        self.uid = uid
        self.gid = gid
        self.mtime = mtime
        self.linkTarget = linkTarget
        self.userName = userName
        self.groupName = groupName
        self.deviceMajor = deviceMajor
        self.deviceMinor = deviceMinor
    }

    /// Decodes a single 512-byte ustar (or GNU, or v7) header block on its own, without any
    /// pax or GNU long-name header that may precede it in the stream.
    ///
    /// This is meant for cross-checking: given an index that claims a member's ustar header is
    /// at some offset, read that block and compare. Paths longer than the ustar fields allow
    /// come back as the placeholder stored in the block, not the full path.
    ///
    /// - Parameters:
    ///   - ustarBlock: at least 512 bytes; only the first 512 are read.
    ///   - offset: the block's offset in the tar stream, used in error messages.
    /// - Throws: ``TarError`` with code `.truncated` for a short buffer, `.badField` for an
    ///   all-zero block (an end-of-archive marker) or a malformed field, `.badChecksum`.
    public static func decode(ustarBlock: UnsafeRawBufferPointer, offset: UInt64) throws -> TarHeader {
        guard ustarBlock.count >= UstarBlock.size else {
            throw TarError(code: .truncated, message: "header block has only \(ustarBlock.count) of 512 bytes", offset: offset)
        }
        let block = UnsafeRawBufferPointer(rebasing: ustarBlock[0..<UstarBlock.size])
        if UstarBlock.isZero(block) {
            throw TarError(code: .badField, message: "all-zero block (end-of-archive marker), not a header", offset: offset)
        }
        let fields = try UstarBlock.decode(block, offset: offset)
        return TarHeader(fields: fields, overrides: .init())
    }
}

extension TarHeader {
    /// Values from pax records (global defaults merged with the member's own `x` header) and
    /// GNU long names that take precedence over the ustar fields.
    struct Overrides {
        var path: String?
        var linkPath: String?
        /// `SCHILY.xattr.*` records of the member's own `x` header, in order, distinct as bytes.
        var extendedAttributes: [ExtendedAttribute] = []
        /// Where each name is in ``extendedAttributes``, so that a repeated record replaces the
        /// earlier value (the last record wins, as for every pax keyword) in constant time.
        var extendedAttributePositions: [ExactName: Int] = [:]

        /// `SCHILY.acl.access` and `SCHILY.acl.default` of the member's own `x` header.
        var accessACL: String?
        var defaultACL: String?

        /// Records one `SCHILY.xattr.<name>` value; a name already recorded (as bytes) is replaced.
        mutating func setExtendedAttribute(name: String, value: [UInt8]) {
            if let position = extendedAttributePositions[ExactName(name)] {
                extendedAttributes[position].value = value
            } else {
                extendedAttributePositions[ExactName(name)] = extendedAttributes.count
                extendedAttributes.append(ExtendedAttribute(name: name, value: value))
            }
        }
        var size: UInt64?
        var mtime: TarTimestamp?
        var uid: UInt64?
        var gid: UInt64?
        var userName: String?
        var groupName: String?
    }

    /// Combines a decoded block with its overrides, applying the reading conventions every
    /// extractor follows: a regular-file name ending in "/" is a directory (the pre-POSIX
    /// spelling), and a typeflag-5 directory never has content whatever its size field says.
    init(fields: UstarBlock.Fields, overrides: Overrides) {
        var kind = TarEntryKind(typeflag: fields.typeflag)
        var path = overrides.path ?? fields.path
        var size = overrides.size ?? fields.size
        if kind == .regular, UTF8Bytes.endsWithSlash(path) {
            kind = .directory
        }
        if fields.typeflag == UInt8(ascii: "5") {
            size = 0
        }
        if kind == .directory, !UTF8Bytes.endsWithSlash(path) {
            path += "/"
        }
        let linkTarget: String? =
            switch kind {
            case .hardLink, .symbolicLink: overrides.linkPath ?? fields.linkName
            default: nil
            }
        let userName = overrides.userName ?? fields.userName
        let groupName = overrides.groupName ?? fields.groupName
        self.init(
            path: path,
            kind: kind,
            size: size,
            mode: fields.mode,
            uid: overrides.uid ?? fields.uid,
            gid: overrides.gid ?? fields.gid,
            mtime: overrides.mtime ?? TarTimestamp(seconds: fields.mtime),
            linkTarget: linkTarget,
            userName: userName?.isEmpty == true ? nil : userName,
            groupName: groupName?.isEmpty == true ? nil : groupName,
            deviceMajor: fields.deviceMajor,
            deviceMinor: fields.deviceMinor
        )
        self.extendedAttributeList = overrides.extendedAttributes
        self.accessACL = overrides.accessACL
        self.defaultACL = overrides.defaultACL
    }
}
