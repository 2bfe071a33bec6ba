public import Logging
import Synchronization
import Tar

/// How to extract, and the limits that keep a hostile archive from exhausting memory or disk.
public struct ExtractOptions: Sendable {
    /// Only these members (paths as listed, with or without a directory's trailing `/`); a
    /// directory selects everything under it. `nil` extracts everything.
    ///
    /// A name selects the member of exactly its bytes: `"caf\u{E9}"` does not take a member named
    /// `"cafe\u{301}"`, a different file on disk. A `Set<String>` holds only one of two such
    /// names (`String` equality is canonical equivalence); ``selection`` keeps both.
    public var members: Set<String>? {
        get { selection?.names }
        set { selection = newValue.map { MemberSelection($0) } }
    }
    /// The same choice as ``members``, with every distinct name kept, two canonically
    /// equivalent ones included (`amk extract` passes its arguments this way).
    public var selection: MemberSelection? = nil
    /// The selection as the engine matches it.
    package var memberFilter: MemberFilter? { selection?.filter }
    /// Strip a leading `/` from absolute member paths instead of refusing them.
    public var allowAbsolutePaths: Bool = false
    /// Restore permission bits from the archive. Set-user-ID and set-group-ID bits of files are
    /// kept only when ownership is restored too (``restoreOwnership`` as root): on a file owned by
    /// whoever extracts, they would grant that user's rights to anyone who runs it, as GNU tar
    /// knows. Dropping them is reported as a warning.
    public var restorePermissions: Bool = true
    /// The permission bits taken off each member's mode when ``restorePermissions`` is off (set-ID
    /// and sticky bits always are): the extracting process's umask, as tar applies it for a user
    /// who is not root. `amk extract` and `amk salvage` set it to theirs.
    public var permissionMask: UInt32 = 0o022
    /// Restore owners and groups (only possible as root).
    public var restoreOwnership: Bool = false
    /// When restoring ownership, give a member the local ids of the user and group it names
    /// (the tar header's `uname`/`gname`), and use its numeric ids only for a name this system
    /// does not know, as GNU tar and bsdtar do: a `postgres` user is rarely the same number on
    /// two machines. `false` uses the numeric ids alone (`tar --numeric-owner`).
    public var mapsOwnersByName: Bool = true
    /// Refuse archives with more members than this.
    public var maxEntries: Int = 10_000_000
    /// Refuse members nested deeper than this many folders (as an unsafe path). The default is
    /// the deepest path the tar reader accepts at all (64 KiB of name, one byte and a slash a
    /// folder), so every tree ``ArchiveBuilder`` packs extracts: 512, the limit when every folder of
    /// the current path held a descriptor, refused trees that `amk pack` wrote and GNU tar
    /// extracts. Depth no longer costs descriptors (at most 16 stay open, ``DirectoryPath``),
    /// and the folders' names kept are those of one path, held to the same 64 KiB.
    public var maxDepth: Int = ExtractOptions.defaultMaxDepth

    /// The default ``maxDepth``: half the tar reader's longest path.
    public static let defaultMaxDepth = TarParser.Limits().maxPathLength / 2
    /// Refuse to write more content bytes than this. `nil` allows 1000 times the archive's size,
    /// at least 4 GiB: more than real data compresses, less than a decompression bomb wants. For
    /// a stream that size is the compressed bytes read so far, and a stream extracted into a
    /// folder is held to the free space there instead. A file of zeros (a sparse disk image)
    /// compresses further than that: set a limit to extract it from an archive that is trusted.
    public var maxBytes: UInt64? = nil
    /// What ``maxBytes`` is when the engine chose it (a stream's destination's free space), for
    /// the refusal's message.
    var byteLimitReason: String? = nil
    /// Whether ``maxBytes`` is the destination's free space (a stream's default), against which
    /// only what the extraction adds to the disk counts: a file replaced gives its blocks back.
    var countsFreeSpace = false
    /// A floor under the limit ``maxBytes`` leaves to the engine: the content an import's
    /// members declare, which the host has already held against the free space. An archive of a
    /// 5 GB preallocated database compresses past the 1000:1 that bounds a bomb, and its own
    /// export could then never be imported.
    package var declaredContentAllowance: UInt64 = 0
    /// Leave every run of whole 4 KiB blocks of zeros (aligned in the file) as a hole, which
    /// takes no space, rather than writing it (bsdtar's `-S`, `cp --sparse=always`): a disk image
    /// or a preallocated database that was archived whole, as amk and GNU tar without `--sparse`
    /// archive it, gets its holes back. The holes are not counted against ``maxBytes``, which
    /// guards the space a bomb would fill. A sparse member's own holes are left as holes either
    /// way; content sent to ``contentOutput`` is always written out.
    public var sparse: Bool = false
    /// Refuse symbolic links whose target is absolute or climbs out of the destination (resolved
    /// from the link's own folder, as the kernel would). Off by default, as in tar: a link is
    /// data and extraction never writes through one. Code that later walks the extracted tree
    /// with ordinary calls that follow links (an importer merging `Documents` into a container)
    /// turns it on, so that no link from the archive can lead such a walk outside.
    public var confineSymlinks: Bool = false
    /// Times each job of the extraction (a block's decode, the writing of what it held) against
    /// its stage's stall timeout (`.compress` for decoding, `.write` for writing); run the
    /// extraction inside ``Watchdog/supervise(policy:_:)`` and pass the watchdog it gives you. A
    /// stall report names the block. `nil` (the default) watches nothing.
    public var watchdog: Watchdog? = nil
    /// Blocks decoded at once.
    public var parallelism: Int = PackOptions.activeCores
    /// Leading path components removed from every member's name (and hard link target) before it
    /// is written, as `tar --strip-components`; a member left with no name is skipped.
    /// ``members`` still selects by the names as stored.
    public var stripComponents: Int = 0
    /// Restore the extended attributes the archive carries (`tar --xattrs`) on files, folders and
    /// symbolic links (on the link itself);
    /// one the file system refuses is reported as a warning. Off by default, as in GNU tar.
    public var restoreExtendedAttributes: Bool = false
    /// The `fnmatch(3)` patterns an attribute's name must match for ``restoreExtendedAttributes``
    /// to restore it (`tar --xattrs-include`). By default the `user.*` and `system.*` (ACLs)
    /// namespaces: `security.*` (file capabilities, SELinux labels) and `trusted.*` grant
    /// privilege, and an archive from elsewhere extracted by root once gave a file
    /// `security.capability` `cap_setuid=ep`. Those left out are reported as a warning.
    public var extendedAttributePatterns: [String] = ["user.*", "system.*"]
    /// Restore the POSIX ACLs other tars store as text (`SCHILY.acl.access`, and a folder's
    /// `SCHILY.acl.default`: GNU tar `--acls`, bsdtar) as the `system.posix_acl_*` attributes Linux
    /// keeps them in (`tar --acls`). A named user or group is this system's of that name when
    /// ``mapsOwnersByName`` is on, else the number stored beside it. One that cannot be read or
    /// set is reported as a warning. An ACL stored as such an attribute (amk, GNU tar `--xattrs`)
    /// comes back with ``restoreExtendedAttributes``. Off by default, as in GNU tar.
    public var restoreAccessControlLists: Bool = false
    /// What to do when a file, link or other non-folder is already where a member goes.
    public var existingFiles: ExistingFilePolicy = .replace
    /// Goes on past a member that cannot be extracted, as GNU tar and bsdtar do, instead of
    /// ending the extraction there: a name that is refused (`..`, absolute, a link that leads
    /// outside), a file kept under ``ExistingFilePolicy/keep``, a hard link whose target is
    /// missing, or a system call that fails for that member alone (a permission, a name too
    /// long). The member is not created, nothing else is written for it, and it is reported in
    /// ``ExtractSummary/failures``, so the caller can still fail the whole.
    ///
    /// A damaged archive, a limit that is reached, a failure of the file system as a whole (no
    /// space, read-only, I/O error, out of descriptors) and cancellation end the extraction
    /// whatever this says. Off by default: an import that must be whole or nothing, as an
    /// app's data is, stops at the first member that fails.
    public var continuesAfterMemberFailures: Bool = false
    /// Where extraction's diagnostics go: the destination (`debug`), each member as its writing
    /// starts (`trace`) and each ``ExtractWarning`` (`warning`). Silent by default; see
    /// ``PackOptions/logger``.
    public var logger = Logger(label: "IndexedArchive.extract", factory: { _ in SwiftLogNoOpLogHandler() })
    /// Writes the content of the selected regular members to this descriptor, one after another
    /// in archive order, instead of creating anything (`tar -xO`): no folder, file or link is
    /// made and the destination is neither created nor opened. Each member is still checked (its
    /// header against the index, its content against its checksum), but a member found damaged
    /// after its content has gone out cannot be taken back: the extraction then throws, naming
    /// it. The descriptor is left open. ``ExtractSummary/entries`` counts the members selected,
    /// of every kind, and ``ExtractSummary/bytes`` the content written.
    public var contentOutput: Int32? = nil
    /// Called with each member's name (as stored) as its writing starts, from the extracting
    /// thread (`tar -v`); keep it quick.
    public var onMember: (@Sendable (String) -> Void)? = nil
    /// Called with the name (as stored) of every member the selection takes, as it is reached,
    /// whatever becomes of it (written, refused, skipped): which of the names asked for matched
    /// something, for `amk extract` to name the others as GNU tar does. From the extracting
    /// thread; keep it quick.
    package var onSelected: (@Sendable (String) -> Void)? = nil

    /// These options, with ``onSelected`` also recording which names of the selection matched,
    /// and what then names those that matched nothing (an extraction's `unmatchedMembers`).
    package func trackingSelection() -> (options: ExtractOptions, unmatched: @Sendable () -> [String]) {
        guard let selection else { return (self, { [] }) }
        let matched = Mutex<Set<ExactName>>([])
        var tracked = self
        let previous = onSelected
        tracked.onSelected = { path in
            matched.withLock { selection.record(path, into: &$0) }
            previous?(path)
        }
        return (tracked, { selection.unmatched(matched: matched.withLock { $0 }) })
    }
    /// Called with each member failure passed over (``continuesAfterMemberFailures``), as it
    /// happens: for `amk extract` to name them even when damage then ends the extraction and
    /// no summary comes back.
    package var onFailure: (@Sendable (ArchiveError) -> Void)? = nil
    /// Called with the content bytes written so far, after each piece, from the extracting
    /// thread (a progress bar); keep it quick.
    public var onProgress: (@Sendable (UInt64) -> Void)? = nil

    /// The defaults: every member, absolute paths refused, permissions restored but not ownership
    /// or extended attributes, the size limit of ``maxBytes``, links not confined, one decoder per
    /// active core.
    public init() {}

    func byteLimit(archiveSize: UInt64) -> UInt64 {
        maxBytes ?? max(4 << 30, archiveSize.multipliedReportingOverflow(by: 1000).partialValue, declaredContentAllowance)
    }
}
