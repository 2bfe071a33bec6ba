import CPlatform
import Dispatch
import Logging
import Tar

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Writes members under a destination directory and nowhere else.
///
/// Paths are resolved one component at a time from a descriptor of the destination with
/// `openat(O_NOFOLLOW | O_DIRECTORY)`, so no symbolic link is ever followed, including one the
/// archive created a moment before; string prefixes are never trusted. The names checked are the
/// names handed to the kernel: one holding a NUL byte (which the kernel would cut short) is
/// refused. The descriptors of the folders on the current path stay open (``DirectoryPath``), so a
/// member costs one `openat` per folder that differs from the previous member's, not one per
/// level: deep trees extract in linear time, and ``ExtractOptions/maxDepth`` bounds the depth.
///
/// A file is created under its own name when nothing is there, as tar does, and removed again if
/// ``endMember()`` is not reached (the readers call it only once the content checks out): a
/// failure, a checksum mismatch or a cancellation leaves no partial file behind. When something is
/// already there, the new content is written under a temporary name beside it and renamed over it
/// by ``endMember()``, so a damaged member never replaces what was there. (Writing every file
/// under a temporary name would protect new files from a SIGKILL too, but its `renameat` was a
/// fifth of the writing thread's time on an archive of small files.) Directory modes
/// and times are applied at the end, after their contents, and also when extraction fails, so no
/// folder is left at the private mode it was created with.
final class Extractor {
    private let root: Int32
    private let rootPath: String
    private let options: ExtractOptions
    /// ``ExtractOptions/byteLimit(archiveSize:)``; for a stream it grows with the compressed
    /// bytes read (``streamed(compressedBytes:)``), so that the ratio, not the stream's length,
    /// decides what is a bomb.
    private(set) var byteLimit: UInt64
    /// What the files that members replaced gave back to ``byteLimit`` (``ExtractOptions/countsFreeSpace``).
    private var replacedBytes: UInt64 = 0
    private let isRoot = geteuid() == 0
    private var path: DirectoryPath
    /// The file being written.
    private var current: OpenFile? {
        // Known to the process, so that an exit that skips the unwinding still removes it.
        didSet {
            if let current, current.parent >= 0 {
                UnfinishedFiles.begin(ObjectIdentifier(self), parent: current.parent, name: current.temporary ?? current.name)
            } else if oldValue != nil {
                UnfinishedFiles.end(ObjectIdentifier(self))
            }
        }
    }
    /// Directories created or reused, in archive order; their metadata is applied at the end.
    /// Their extended attributes and ACLs are kept only when they will be restored, and within
    /// ``deferredAttributeBudget``.
    private var directories: [TarHeader] = []
    /// Bytes of extended attributes and ACL text that ``directories`` holds.
    private var deferredAttributeBytes = 0
    /// The most extended attributes and ACL text that the folders' deferred metadata may hold:
    /// 1,500 folder headers of 219 KB of archive, each with a 1 MB attribute, held 1.5 GB until
    /// the end, with `--xattrs` or without. Past it, a folder's attributes are set as it is made
    /// and its ACLs (which the files made in it afterwards would inherit) are not restored.
    static let deferredAttributeBudget = 32 << 20
    private(set) var entries = 0
    private(set) var bytes: UInt64 = 0
    /// Bytes of ``bytes`` left as holes in files (a sparse member's): they take no space, and the
    /// byte limit is there to guard the space a bomb would fill.
    private var holeBytes: UInt64 = 0
    /// Whether ``byteLimit`` stays as it is: not a stream's, which grows as it is read.
    private let limitIsFinal: Bool
    /// Whether the current file ends in a hole so far, which only setting its size can make.
    private var endsInHole = false
    /// The first ``ExtractSummary/keptWarnings`` warnings, and how many in all.
    private(set) var warnings: [ExtractWarning] = []
    private(set) var warningCount = 0
    /// The hard links whose target could not be made (for a salvage's report), which the cap
    /// on ``warnings`` must not hide.
    private(set) var missingLinkMembers: [String] = []
    /// Members not extracted (``ExtractOptions/continuesAfterMemberFailures``): the first
    /// ``ExtractSummary/keptFailures``, and how many in all.
    private(set) var failures: [ArchiveError] = []
    private(set) var failedMembers = 0
    /// The paths of those members, as the archive spells them: a later pass that sets times by
    /// name (a stream's nanoseconds) must not touch what is there under that name, which the
    /// extraction did not write (a file kept by `--keep-old-files`).
    private(set) var failedPaths: Set<ExactName> = []

    /// ``ExtractOptions/contentOutput``: where regular members' content goes instead of files.
    private let output: Int32?
    /// The tar stream's size, when the reader knows it (a file's xz Index gives it): a member
    /// declaring more content is damage, not a limit to raise.
    var tarStreamSize: UInt64?

    /// What was made for a member from bytes not yet known to be sound: removed if its block
    /// then fails (see ``verified(through:)``).
    private struct Unverified {
        /// Its path (as extracted), in ``unverifiedNames``.
        var name: Range<Int>
        let isDirectory: Bool
        /// Whether the extraction created it (a folder that was there already stays).
        let created: Bool
        /// Its content went to ``ExtractOptions/contentOutput``, which cannot be taken back.
        var wentOut = false
        /// Its place in ``directories``, for a folder: its header's mode and times are not applied.
        let directoryIndex: Int?
        /// Where its bytes end in the tar stream.
        var reach: UInt64 = 0
    }
    /// Tar offset before which every byte handed over has passed its integrity check: everything
    /// (`.max`) until a reader that hands over bytes before their check says otherwise.
    private var verifiedOffset = UInt64.max
    private var unverified: [Unverified] = []
    private var unverifiedStart = 0
    /// The paths of ``unverified``, back to back: a path each, not the parts of one, keeps a
    /// stretch of 30,000 members within a few MiB.
    private var unverifiedNames: [UInt8] = []
    /// Members made from unverified bytes that are no longer held for removal: past
    /// ``maxUnverified`` (or ``maxUnverifiedNameBytes``), the oldest are let go.
    private var untracked = 0
    /// What was made for the member begun last, and its path, until ``settle(reach:)``.
    private var made: (item: Unverified, path: String)?
    /// The most members held for removal at once, and the most bytes of their paths: a stream
    /// whose blocks carry no sizes is one unverified stretch to its end.
    static let maxUnverified = 32_768
    static let maxUnverifiedNameBytes = 4 << 20

    init(destination: String, options: ExtractOptions, archiveSize: UInt64) throws(ArchiveError) {
        self.options = options
        self.byteLimit = options.byteLimit(archiveSize: archiveSize)
        limitIsFinal = options.maxBytes != nil || archiveSize > 0
        output = options.contentOutput
        if let output {
            // Nothing is made: no destination to create or hold open.
            root = -1
            rootPath = output == STDOUT_FILENO ? "standard output" : "descriptor \(output)"
            path = DirectoryPath(root: -1)
            options.logger.debug("extracting content to", metadata: ["output": "\(rootPath)"])
            return
        }
        try SystemCall.refuseNUL(destination)
        try Self.makeDirectories(destination)
        self.root = try SystemCall.open(destination, O_RDONLY | O_DIRECTORY)
        self.rootPath = destination
        self.path = DirectoryPath(root: root)
        options.logger.debug("extracting into", metadata: ["destination": "\(TerminalSafe.name(destination))"])
    }

    private func record(_ warning: ExtractWarning) {
        // Names come from the archive and logs are read on terminals: escaped.
        options.logger.warning("\(TerminalSafe.message(warning.message))", metadata: ["member": "\(TerminalSafe.name(warning.member))"])
        warningCount += 1
        if warnings.count < ExtractSummary.keptWarnings { warnings.append(warning) }
        if warning.kind == .missingLinkTarget { missingLinkMembers.append(warning.member) }
    }

    deinit {
        abandonCurrent()
        // Its folder's descriptor closes below: a number that may be reused must not stay listed.
        UnfinishedFiles.end(ObjectIdentifier(self))
        path.closeAll()
        if root >= 0 { SystemCall.close(root) }
    }

    /// Creates `destination` and any missing parents, as `mkdir -p` does.
    private static func makeDirectories(_ destination: String) throws(ArchiveError) {
        var prefix = destination.utf8.first == slash ? "/" : ""
        for part in byteComponents(destination.utf8) {
            prefix += (prefix.isEmpty || prefix.utf8.last == slash ? "" : "/") + String(decoding: part, as: UTF8.self)
            if RawName.withCString(prefix, { mkdir($0, 0o755) }) != 0 && errno != EEXIST {
                throw SystemCall.error("create the destination folder", path: prefix)
            }
        }
    }

    /// The path's components, or an error if it would leave the destination or name something
    /// other than what the kernel would be given.
    ///
    /// Everything is judged on the UTF-8 bytes, as the kernel reads them: Swift's `String`
    /// compares and splits grapheme clusters, so `"/"` followed by a combining mark is one
    /// character that is not `"/"`, and `"../\u{301}x"` would be one harmless-looking component to
    /// `split(separator: "/")` while the kernel sees `..` and climbs out.
    func components(of path: String) throws(ArchiveError) -> [String] {
        try Self.components(of: path, options: options)
    }

    /// ``components(of:)`` under `options`, for work that runs beside the extractor's thread.
    static func components(of path: String, options: ExtractOptions) throws(ArchiveError) -> [String] {
        let parts: [String]
        switch shape(of: path, allowAbsolute: options.allowAbsolutePaths) {
        case .parts(let found): parts = found
        // The kernel reads a name up to its first NUL: a name holding one would be checked here
        // as one name and acted on as another, so it is refused whole.
        case .nul: throw ArchiveError(.unsafePath, "path contains a NUL byte; refused", member: path)
        case .absolute: throw ArchiveError(.unsafePath, "absolute path refused", member: path)
        case .dotDot: throw ArchiveError(.unsafePath, "path with '..' refused", member: path)
        case .empty: throw ArchiveError(.unsafePath, "empty path refused", member: path)
        }
        guard parts.count <= options.maxDepth else {
            // Refused like an unsafe path, before any folder of it is made. The member is named
            // whole (escaped where it is shown): a name cut short is not one the archive holds.
            throw ArchiveError(
                .unsafePath, "path is \(parts.count) levels deep, over the limit of \(options.maxDepth); refused",
                member: path)
        }
        return parts
    }

    /// What ``components(of:)`` found in a path's bytes.
    enum PathShape: Equatable {
        case parts([String])
        case nul
        case absolute
        case dotDot
        case empty
    }

    /// ``shape(of:allowAbsolute:)`` of `path`'s UTF-8, read in place when the string is contiguous.
    static func shape(of path: String, allowAbsolute: Bool) -> PathShape {
        path.utf8.withContiguousStorageIfAvailable { shape(of: $0, allowAbsolute: allowAbsolute) }
            ?? Array(path.utf8).withUnsafeBufferPointer { shape(of: $0, allowAbsolute: allowAbsolute) }
    }

    /// The components of `bytes` without `.`, or the first reason to refuse them: a loop over the
    /// buffer, since extraction asks it for every member (the generic split of the string's
    /// UTF-8 view was the largest share of the writing thread's own time on small files).
    static func shape(of bytes: UnsafeBufferPointer<UInt8>, allowAbsolute: Bool) -> PathShape {
        if bytes.contains(0) { return .nul }
        if bytes.first == slash && !allowAbsolute { return .absolute }
        var parts: [String] = []
        var index = 0
        while index < bytes.count {
            while index < bytes.count && bytes[index] == slash { index += 1 }
            let start = index
            while index < bytes.count && bytes[index] != slash { index += 1 }
            let part = UnsafeBufferPointer(rebasing: bytes[start..<index])
            switch part.count {
            case 0: continue
            case 1 where part[0] == dotByte: continue
            case 2 where part[0] == dotByte && part[1] == dotByte: return .dotDot
            // The bytes came from a valid String and are cut at ASCII '/', so each part is valid UTF-8.
            default: parts.append(String(decoding: part, as: UTF8.self))
            }
        }
        return parts.isEmpty ? .empty : .parts(parts)
    }

    static let dotByte = UInt8(ascii: ".")
    static let slash = UInt8(ascii: "/")
    static let dot = Array(".".utf8)
    static let dotDot = Array("..".utf8)

    /// The non-empty runs of `bytes` between `/` bytes.
    static func byteComponents<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> [Bytes.SubSequence] {
        bytes.split(separator: slash, omittingEmptySubsequences: true)
    }

    /// Whether a link at `linkComponents` pointing to `target` resolves inside the destination.
    /// Only targets of the form `../../a/b` qualify, climbing no higher than the root: a `..`
    /// after a name could climb out of a folder that is itself a link (`s/../..` with `s` a link
    /// to a deep folder), and judging that would mean resolving links. With every link of the
    /// tree held to this rule, resolution through links stays inside too: each link's parents are
    /// real folders (extraction never creates through a link), so by induction every hop lands
    /// inside. Judged on bytes, as ``components(of:)`` is.
    static func staysInside(target: String, linkComponents: [String]) -> Bool {
        let bytes = Array(target.utf8)
        guard bytes.first != slash, !bytes.isEmpty, !bytes.contains(0) else { return false }
        var climbs = 0
        var sawName = false
        for part in byteComponents(bytes) {
            if part.elementsEqual(dot) { continue }
            if part.elementsEqual(dotDot) {
                guard !sawName else { return false }
                climbs += 1
            } else {
                sawName = true
            }
        }
        return climbs <= linkComponents.count - 1
    }

    /// The descriptor of the folder that holds the last component, creating missing folders,
    /// never following a link. It belongs to the path cache: do not close it.
    private func parent(of parts: [String], member: String, create: Bool) throws(ArchiveError) -> Int32 {
        do {
            return try path.descend(to: parts.dropLast(), create: create)
        } catch {
            switch error {
            case .link(let name):
                throw ArchiveError(
                    .unsafePath, "'\(name)' is a symbolic link or not a directory; refusing to write through it", member: member)
            case .system(let operation, let name, let code):
                throw ArchiveError(
                    .io(errno: code), "\(operation) '\(name)': \(String(cString: strerror(code)))", path: rootPath, member: member)
            }
        }
    }

    private func failure(_ operation: String, member: String) -> ArchiveError {
        let code = errno
        return ArchiveError(.io(errno: code), "\(operation): \(String(cString: strerror(code)))", path: rootPath, member: member)
    }

    /// Starts a member. Content, if any, follows through `write`, then `endMember`.
    ///
    /// `isSparse`: the member is a sparse one, whose holes do not count against the byte limit,
    /// so its size alone cannot exceed it.
    ///
    /// With ``ExtractOptions/continuesAfterMemberFailures``, a member that fails on its own
    /// (here, or in `write`, `writeHole` or `endMember`) is recorded and passed over instead: its
    /// file is removed, nothing is open for it, so the rest of its content goes nowhere and its
    /// `endMember` does nothing.
    func begin(_ stored: TarHeader, isSparse: Bool = false) throws(ArchiveError) {
        options.onSelected?(stored.path)
        let counted = entries
        begun = stored.path
        made = nil
        bytesAtBegin = (bytes, holeBytes)
        do {
            try beginMember(stored, isSparse: isSparse)
        } catch {
            guard passesOver(error) else { throw error }
            entries = counted
        }
    }

    /// The member begun last, as the archive names it.
    private var begun = ""
    /// ``bytes`` and ``holeBytes`` when it was begun: a member passed over is not counted as
    /// written (a summary said 7.4 MiB with 6 bytes on disk), and its file is gone.
    private var bytesAtBegin: (bytes: UInt64, holes: UInt64) = (0, 0)

    /// Records `error` as the failure of the member begun last and drops what was made of it,
    /// when the extraction goes on past such failures (``ExtractOptions/continuesAfterMemberFailures``);
    /// false, with nothing done, for any other error.
    private func passesOver(_ error: ArchiveError) -> Bool {
        guard options.continuesAfterMemberFailures, Self.isMemberFailure(error) else { return false }
        removeCurrent()
        made = nil
        failedPaths.insert(ExactName(begun))
        report(error, member: begun)
        return true
    }

    /// ``passesOver(_:)`` for a failure once the member was begun (and counted): not when the
    /// content goes to the caller's descriptor, whose failure (a reader gone) is not the member's.
    private func passesOverBegun(_ error: ArchiveError) -> Bool {
        guard output == nil, current != nil, passesOver(error) else { return false }
        entries -= 1
        (bytes, holeBytes) = bytesAtBegin
        return true
    }

    /// Whether `error` concerns one member alone, so that the extraction may go on past it: a
    /// refused name, or a system call that failed for that name. Damage, limits and failures of
    /// the whole file system (which every later member would meet too) end the extraction.
    static func isMemberFailure(_ error: ArchiveError) -> Bool {
        switch error.code {
        case .unsafePath: return true
        case .io(let code):
            return ![ENOSPC, EDQUOT, EROFS, EIO, EMFILE, ENFILE, ENOMEM, EBADF, EINTR].contains(code)
        default: return false
        }
    }

    private func beginMember(_ stored: TarHeader, isSparse: Bool) throws(ArchiveError) {
        // A GNU volume label ('V', `tar --label`) names the archive, not a file: its text need
        // not be a path, and GNU tar passes over it when extracting.
        if stored.kind == .other(UInt8(ascii: "V")) { return }
        guard let header = try strippedHeader(stored) else { return }
        entries += 1
        guard entries <= options.maxEntries else {
            throw ArchiveError(.limitExceeded, "more than \(options.maxEntries) members", member: header.path)
        }
        if let output {
            // A selected hard link stands for its file's content. Read in order, that content
            // went by with the file's own member; unless the selection took that member too
            // (its content is out already, once, as `tar -xO` writes it), nothing would go out
            // for the link and the extraction would succeed.
            if header.kind == .hardLink, let filter = options.memberFilter, !filter.selects(stored.linkTarget ?? "") {
                throw ArchiveError(
                    .io(errno: ENOENT),
                    "hard link to '\(stored.linkTarget ?? "")', whose content came earlier in the stream and was not "
                        + "extracted: select it too, or read the archive from a file with its amk index",
                    member: stored.path)
            }
            // Only content goes out: a name is never resolved, so nothing about it can be unsafe.
            guard header.kind == .regular else { return }
            options.onMember?(stored.path)
            current = OpenFile(fd: output, parent: -1, temporary: nil, name: "", header: header)
            var sent = Unverified(name: 0..<0, isDirectory: false, created: false, directoryIndex: nil)
            sent.wentOut = true
            made = (sent, header.path)
            endsInHole = false
            return
        }
        // "./", the first member of every `tar -C dir -c .` archive, is the destination itself,
        // which exists; its mode and owner are the caller's, not the archive's.
        if header.kind == .directory, Self.shape(of: header.path, allowAbsolute: false) == .empty {
            return
        }
        let parts = try components(of: header.path)
        let name = parts.last!
        options.logger.trace("extracting", metadata: ["member": "\(TerminalSafe.name(stored.path))"])
        options.onMember?(stored.path)
        if options.existingFiles == .keep && header.kind != .directory {
            try refuseExisting(parts, member: header.path)
        }
        switch header.kind {
        case .directory:
            let parent = try parent(of: parts, member: header.path, create: true)
            var created = true
            if RawName.withCString(name, { mkdirat(parent, $0, 0o700) }) != 0 {
                created = false
                guard errno == EEXIST else { throw failure("mkdir", member: header.path) }
                var info = stat()
                guard RawName.withCString(name, { fstatat(parent, $0, &info, AT_SYMLINK_NOFOLLOW) }) == 0 else {
                    throw failure("stat", member: header.path)
                }
                if info.st_mode & S_IFMT != S_IFDIR {
                    // A file, or a link (to a folder or not), where the archive has a folder: replaced,
                    // as tar replaces it, unless existing files are kept. The link is removed, never
                    // followed. The extraction used to stop there, and every member after it was lost.
                    guard options.existingFiles == .replace else {
                        throw ArchiveError(
                            .io(errno: EEXIST), "a file or a link is in the way of this folder, and existing files are kept",
                            member: header.path)
                    }
                    guard RawName.withCString(name, { unlinkat(parent, $0, 0) }) == 0,
                        RawName.withCString(name, { mkdirat(parent, $0, 0o700) }) == 0
                    else { throw failure("replace the file in the way of this folder", member: header.path) }
                    created = true
                }
            }
            made = (Unverified(name: 0..<0, isDirectory: true, created: created, directoryIndex: directories.count), header.path)
            directories.append(deferred(header, made: name, in: parent))
        case .regular:
            // Content that cannot fit the limit is refused before a byte is written: the
            // member's size is known, and a 5 GiB disk image of zeros was written up to the
            // limit (4 GB, 10 s) and then removed. (Written as holes, zeros do not count.)
            let used = min(bytes - holeBytes, byteLimit)
            if !isSparse, let total = tarStreamSize, header.size > total {
                // More than the whole stream holds cannot be there: the archive is damaged, and
                // a limit with advice to raise it if the archive is trusted sent users astray.
                throw ArchiveError(
                    .corrupt,
                    "it declares \(header.size) bytes of content, more than the whole tar stream holds (\(total) bytes): "
                        + "the archive is damaged",
                    member: header.path)
            }
            if limitIsFinal, !options.sparse, !isSparse, header.size > byteLimit - used {
                throw limitExceeded(member: header.path, declared: header.size)
            }
            let parent = try parent(of: parts, member: header.path, create: true)
            let (fd, temporary) = try create(name, in: parent, member: header.path)
            current = OpenFile(fd: fd, parent: parent, temporary: temporary, name: name, header: header)
            endsInHole = false
            made = (Unverified(name: 0..<0, isDirectory: false, created: true, directoryIndex: nil), header.path)
        case .symbolicLink:
            let target = header.linkTarget ?? ""
            guard !target.utf8.contains(0) else {
                throw ArchiveError(.unsafePath, "link target contains a NUL byte; refused", member: header.path)
            }
            if options.confineSymlinks, !Self.staysInside(target: target, linkComponents: parts) {
                throw ArchiveError(.unsafePath, "symbolic link to '\(target)' leads outside the destination; refused", member: header.path)
            }
            let parent = try parent(of: parts, member: header.path, create: true)
            try replace(name, in: parent, member: header.path, making: "symlink") { temporary in
                RawName.withCString(target, { target in RawName.withCString(temporary) { symlinkat(target, parent, $0) } }) == 0
            }
            made = (Unverified(name: 0..<0, isDirectory: false, created: true, directoryIndex: nil), header.path)
            var times = Self.times(header)
            // Through a descriptor of the link itself: by name, someone who may write in the
            // destination could swap a hard link to a file elsewhere in for it meanwhile, and
            // that file would get the archive's owner and time.
            let link = Self.openItself(name, in: parent)
            defer { if link >= 0 { SystemCall.close(link) } }
            if Self.opensItself {
                // Gone, or something else: nothing is set by its name, which is no longer the link's.
                var info = stat()
                guard link >= 0, fstat(link, &info) == 0, info.st_mode & S_IFMT == S_IFLNK else {
                    throw ArchiveError(
                        .unsafePath, "the link made for it was replaced by something else as it was extracted; nothing was set on that",
                        member: header.path)
                }
            }
            Self.setTimes(&times, of: link, named: name, in: parent)
            if options.restoreOwnership && isRoot {
                let (uid, gid) = owner(of: header)
                if link >= 0 {
                    _ = fchownat(link, "", uid, gid, amk_at_empty_path())
                } else {
                    _ = RawName.withCString(name) { fchownat(parent, $0, uid, gid, AT_SYMLINK_NOFOLLOW) }
                }
            }
            // After the owner, as for files (a chown clears some attributes). Linux allows only
            // `trusted.` and `security.` names on a link; GNU tar restores those, and amk
            // dropped them without a word.
            restoreExtendedAttributes(header) { ExtendedAttributes.write($0, toLinkNamed: name, in: parent) }
        case .hardLink:
            let targetParts: [String]
            do throws(ArchiveError) {
                // A target spelt as a folder (`a/`) names no file a link can share, as GNU tar and
                // bsdtar find ("Not a directory"); its slash was dropped and the file linked.
                if UTF8Bytes.endsWithSlash(header.linkTarget ?? "") {
                    throw ArchiveError(.unsafePath, "it names a folder, which no hard link can be made to")
                }
                targetParts = try components(of: header.linkTarget ?? "")
            } catch {
                // The member at fault is the link: naming its target as the member would send
                // whoever reads the message looking for a member that is not in the archive.
                throw ArchiveError(
                    error.code, "hard link target '\(header.linkTarget ?? "")': \(error.message)", member: header.path)
            }
            if skipsLinksToMissingTargets && !targetExists(targetParts) {
                entries -= 1
                record(
                    ExtractWarning(
                        member: header.path, kind: .missingLinkTarget,
                        message: "skipped: its target '\(header.linkTarget ?? "")' was not recovered"))
                return
            }
            // Its target not extracted (a selection without it, from an archive without our
            // index) is said as such: "cannot open directory" would send the reader looking for
            // a folder.
            // With every member extracted, the archive has it after the link or not at all:
            // "extract the whole archive" was advice to do what had been done.
            let missingTarget = ArchiveError(
                .io(errno: ENOENT),
                "hard link to '\(header.linkTarget ?? "")', which has not been extracted: "
                    + (options.selection == nil
                        ? "the archive holds no such member before the link" : "select it too, or extract the whole archive"),
                member: header.path)
            // Two descriptors of the cache cannot be held at once: the target's folder is opened
            // on its own (a dup survives the cache moving on).
            let targetParent: Int32
            do {
                targetParent = dup(try parent(of: targetParts, member: header.path, create: false))
            } catch  where error.code == .io(errno: ENOENT) {
                throw missingTarget
            }
            guard targetParent >= 0 else { throw failure("dup", member: header.path) }
            defer { SystemCall.close(targetParent) }
            var target = stat()
            let targetFound = RawName.withCString(targetParts.last!, { fstatat(targetParent, $0, &target, AT_SYMLINK_NOFOLLOW) }) == 0
            guard targetFound || errno != ENOENT else { throw missingTarget }
            let parent = try parent(of: parts, member: header.path, create: true)
            // Already that very file: a link to itself (GNU tar stores a file named twice on its
            // command line so), or a link extracted again over its own tree. Removing the name
            // first would remove the target with it, and the link would then have nothing to
            // point at: the file just written (or the user's) would be lost.
            var existing = stat()
            if targetFound, RawName.withCString(name, { fstatat(parent, $0, &existing, AT_SYMLINK_NOFOLLOW) }) == 0,
                existing.st_dev == target.st_dev, existing.st_ino == target.st_ino
            {
                return
            }
            try replace(name, in: parent, member: header.path, making: "hard link to '\(header.linkTarget ?? "")'") { temporary in
                RawName.withCString(
                    targetParts.last!, { source in RawName.withCString(temporary) { linkat(targetParent, source, parent, $0, 0) } }) == 0
            }
            made = (Unverified(name: 0..<0, isDirectory: false, created: true, directoryIndex: nil), header.path)
        default:
            entries -= 1
            record(
                ExtractWarning(
                    member: header.path, kind: .unsupportedType,
                    message: "skipped: \(Self.kindName(header.kind)) are not extracted"))
        }
    }

    /// What a warning calls members of a kind the extractor does not create, in words.
    static func kindName(_ kind: TarEntryKind) -> String {
        switch kind {
        case .characterDevice: "character devices"
        case .blockDevice: "block devices"
        case .fifo: "FIFOs"
        case .other(let byte):
            "members of tar type '\(byte >= 0x21 && byte < 0x7f ? String(UnicodeScalar(byte)) : "\\x" + String(byte, radix: 16))'"
        default: "\(kind) members"
        }
    }

    /// `header` with ``ExtractOptions/stripComponents`` leading components removed from its path
    /// (and a hard link's target), or nil when nothing of the path remains.
    private func strippedHeader(_ header: TarHeader) throws(ArchiveError) -> TarHeader? {
        guard options.stripComponents > 0 else { return header }
        guard let path = strippedPath(header.path) else { return nil }
        var header = header
        header.path = path
        if header.kind == .hardLink {
            guard let target = strippedPath(header.linkTarget ?? "") else {
                throw ArchiveError(
                    .unsafePath,
                    "hard link target '\(header.linkTarget ?? "")' has no name left after stripping \(options.stripComponents) components",
                    member: header.path)
            }
            header.linkTarget = target
        }
        return header
    }

    /// `path` as members are written: without its first ``ExtractOptions/stripComponents``
    /// components, or nil when nothing of it remains.
    private func strippedPath(_ path: String) -> String? {
        Self.strippedPath(path, count: options.stripComponents)
    }

    private static func strippedPath(_ path: String, count: Int) -> String? {
        guard count > 0 else { return path }
        let parts = Self.byteComponents(path.utf8)
        guard parts.count > count else { return nil }
        return parts.dropFirst(count).map { String(decoding: $0, as: UTF8.self) }.joined(separator: "/")
    }

    /// Throws when something other than a folder is at `parts` (``ExistingFilePolicy/keep``).
    private func refuseExisting(_ parts: [String], member: String) throws(ArchiveError) {
        guard let parent = try? parent(of: parts, member: member, create: false) else { return }
        var info = stat()
        guard RawName.withCString(parts.last!, { fstatat(parent, $0, &info, AT_SYMLINK_NOFOLLOW) }) == 0 else { return }
        throw ArchiveError(.io(errno: EEXIST), "already exists; not replaced (--keep-old-files)", path: rootPath, member: member)
    }

    /// Whether `parts` names something in the destination, without following links.
    private func targetExists(_ parts: [String]) -> Bool {
        guard let parent = try? parent(of: parts, member: "", create: false) else { return false }
        var info = stat()
        return RawName.withCString(parts.last!) { fstatat(parent, $0, &info, AT_SYMLINK_NOFOLLOW) } == 0
    }

    /// A new file for `name` in `parent`, private (0600) until ``endMember()``: `name` itself when
    /// nothing is there, else a temporary name to be renamed over it. `O_EXCL` with `O_NOFOLLOW`
    /// also refuses a symbolic link at `name`, so a link planted there is replaced, never followed.
    private func create(_ name: String, in parent: Int32, member: String) throws(ArchiveError) -> (Int32, String?) {
        let fd = RawName.withCString(name) { Platform.openat(parent, $0, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600) }
        if fd >= 0 { return (fd, nil) }
        guard errno == EEXIST else { throw failure("create", member: member) }
        let (temporaryFD, temporary) = try createTemporary(in: parent, member: member)
        return (temporaryFD, temporary)
    }

    /// Removes what is at `name` in `parent` for a member that is not a folder: a file or a link
    /// (never followed), or an empty folder, as tar replaces them. A folder that holds something
    /// is refused, in the same words whatever the member is (a link's refusal said "symlink: File
    /// exists").
    private func clearTheWay(for name: String, in parent: Int32, member: String) throws(ArchiveError) {
        if RawName.withCString(name, { unlinkat(parent, $0, 0) }) == 0 || errno == ENOENT { return }
        guard errno == EISDIR || errno == EPERM else { return }
        if RawName.withCString(name, { unlinkat(parent, $0, AT_REMOVEDIR) }) == 0 { return }
        if errno == ENOTEMPTY || errno == EEXIST {
            throw ArchiveError(.unsafePath, "a folder that is not empty is in the way", member: member)
        }
    }

    /// Makes a link (`make` creates it at the temporary name it is given; `what` names the call
    /// in errors) under a temporary name and renames it over what is at `name`, as a file is
    /// written: what was there stays until the link exists. Removed first, a user's file was lost
    /// when the link could not be made (a 5,001-byte target, ENAMETOOLONG), where GNU tar and
    /// bsdtar keep it.
    private func replace(
        _ name: String, in parent: Int32, member: String, making what: String, _ make: (String) -> Bool
    ) throws(ArchiveError) {
        var temporary: String?
        for _ in 0..<16 where temporary == nil {
            let candidate = ".amk-\(String(UInt64.random(in: 0...UInt64.max), radix: 36))"
            if make(candidate) {
                temporary = candidate
            } else if errno != EEXIST {
                throw failure(what, member: member)
            }
        }
        guard let temporary else {
            throw ArchiveError(.io(errno: EEXIST), "\(what): no free temporary name", path: rootPath, member: member)
        }
        let renamed = {
            RawName.withCString(temporary, { temporary in RawName.withCString(name) { renameat(parent, temporary, parent, $0) } }) == 0
        }
        do throws(ArchiveError) {
            if !renamed() {
                guard errno == EISDIR || errno == ENOTEMPTY || errno == EEXIST else { throw failure(what, member: member) }
                // A folder is in the way: an empty one gives way, as in tar.
                try clearTheWay(for: name, in: parent, member: member)
                guard renamed() else { throw failure(what, member: member) }
            }
        } catch {
            _ = RawName.withCString(temporary) { unlinkat(parent, $0, 0) }
            throw error
        }
    }

    /// A new file with a unique temporary name in `parent`, private until renamed.
    private func createTemporary(in parent: Int32, member: String) throws(ArchiveError) -> (Int32, String) {
        for _ in 0..<16 {
            let name = ".amk-\(String(UInt64.random(in: 0...UInt64.max), radix: 36))"
            let fd = RawName.withCString(name) { Platform.openat(parent, $0, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600) }
            if fd >= 0 { return (fd, name) }
            guard errno == EEXIST else { throw failure("create", member: member) }
        }
        throw ArchiveError(.io(errno: EEXIST), "create: no free temporary name", path: rootPath, member: member)
    }

    /// A stream's size is known only as it is read: the default limit follows the compressed
    /// bytes read so far. A limit of the caller's stays as it is.
    func streamed(compressedBytes: UInt64) {
        guard options.maxBytes == nil else { return }
        byteLimit = max(byteLimit, options.byteLimit(archiveSize: compressedBytes))
    }

    func write(_ data: UnsafeRawBufferPointer) throws(ArchiveError) {
        do {
            try writeContent(data)
        } catch {
            guard passesOverBegun(error) else { throw error }
        }
    }

    private func writeContent(_ data: UnsafeRawBufferPointer) throws(ArchiveError) {
        guard let current else { return }
        if options.sparse && output == nil {
            try writeSparse(data, to: current.fd, member: current.header.path)
            return
        }
        bytes += UInt64(data.count)
        endsInHole = false
        guard bytes - holeBytes <= byteLimit else { throw limitExceeded(member: current.header.path) }
        try writeAll(data, to: current.fd, member: current.header.path)
        options.onProgress?(bytes)
    }

    private func writeAll(_ data: UnsafeRawBufferPointer, to fd: Int32, member: String) throws(ArchiveError) {
        do {
            try SystemCall.writeAll(fd, data, path: rootPath)
        } catch {
            throw ArchiveError(error.code, error.message, path: rootPath, member: member)
        }
    }

    private func limitExceeded(member: String, declared: UInt64? = nil) -> ArchiveError {
        ArchiveError(
            .limitExceeded,
            (declared.map { "its \($0) bytes would make " } ?? "")
                + "more than \(byteLimit) bytes of content, "
                + (options.byteLimitReason ?? (options.maxBytes == nil ? "the limit for an archive of this size" : "the limit set"))
                + (replacedBytes > 0 ? " plus the \(replacedBytes) bytes the files it replaced gave back" : "")
                // The free space is no limit to raise: a larger one only fills the disk. Zeros
                // left as holes take none of it.
                + (options.countsFreeSpace
                    ? "; make room there, or extract into a folder with more"
                    : "; if the archive is trusted, raise it (--max-bytes of amk extract and salvage, ExtractOptions.maxBytes)")
                + (options.sparse
                    ? ""
                    : "\(options.countsFreeSpace ? "; or" : ", or") extract with --sparse (-S, ExtractOptions.sparse), whose holes do not count"),
            member: member)
    }

    /// The size of the blocks of zeros ``ExtractOptions/sparse`` leaves as holes: the page and
    /// file-system block size almost everywhere, so a hole never splits a block that holds data.
    static let sparseBlock = 4096

    /// ``ExtractOptions/sparse``: `data`, with its blocks of zeros (aligned in the file) skipped
    /// as holes. The holes are found before anything is written, so that the byte limit is held
    /// to what takes space.
    private func writeSparse(_ data: UnsafeRawBufferPointer, to fd: Int32, member: String) throws(ArchiveError) {
        let position = lseek(fd, 0, SEEK_CUR)
        guard position >= 0 else { throw failure("seek", member: member) }
        let runs = Self.sparseRuns(of: data, at: position)
        bytes += UInt64(data.count)
        holeBytes += UInt64(runs.reduce(0) { $0 + ($1.hole ? $1.range.count : 0) })
        guard bytes - holeBytes <= byteLimit else { throw limitExceeded(member: member) }
        for run in runs {
            if run.hole {
                guard lseek(fd, off_t(run.range.count), SEEK_CUR) >= 0 else { throw failure("seek", member: member) }
            } else {
                try writeAll(UnsafeRawBufferPointer(rebasing: data[run.range]), to: fd, member: member)
            }
            endsInHole = run.hole
        }
        options.onProgress?(bytes)
    }

    /// `data`, written at `position` of a file, as runs of data and of holes: it is looked at in
    /// units that end on the file's block boundaries (whole blocks, and the parts of one at
    /// either end of `data`, which the next or the previous piece completes), and units of zeros
    /// are holes.
    private static func sparseRuns(of data: UnsafeRawBufferPointer, at position: off_t) -> [(range: Range<Int>, hole: Bool)] {
        let block = sparseBlock
        var runs: [(range: Range<Int>, hole: Bool)] = []
        var unitStart = 0
        var unitEnd = min(data.count, (block - Int(position % off_t(block))) % block)
        if unitEnd == 0 { unitEnd = min(block, data.count) }
        while unitStart < data.count {
            let hole = UnsafeRawBufferPointer(rebasing: data[unitStart..<unitEnd]).isAllZero
            if let last = runs.last, last.hole == hole {
                runs[runs.count - 1].range = last.range.lowerBound..<unitEnd
            } else {
                runs.append((unitStart..<unitEnd, hole))
            }
            unitStart = unitEnd
            unitEnd = min(unitEnd + block, data.count)
        }
        return runs
    }

    /// `length` zero bytes of a sparse member's content. In a file they are left as a hole, which
    /// takes no space (as GNU tar and bsdtar leave them); to a descriptor they are the zeros
    /// themselves, held to the byte limit as any content is.
    func writeHole(_ length: UInt64) throws(ArchiveError) {
        do {
            try writeHoleContent(length)
        } catch {
            guard passesOverBegun(error) else { throw error }
        }
    }

    private func writeHoleContent(_ length: UInt64) throws(ArchiveError) {
        guard let current else { return }
        if output != nil {
            var left = length
            while left > 0 {
                let count = Int(min(left, UInt64(Self.zeros.count)))
                let failure = Self.zeros.withUnsafeBytes { zeros -> ArchiveError? in
                    do throws(ArchiveError) {
                        try write(UnsafeRawBufferPointer(rebasing: zeros[0..<count]))
                        return nil
                        // cancellation: write throws only ArchiveError, which is thrown on below
                    } catch {
                        return error
                    }
                }
                if let failure { throw failure }
                left -= UInt64(count)
            }
            return
        }
        let position = lseek(current.fd, 0, SEEK_CUR)
        guard position >= 0 else { throw failure("seek", member: current.header.path) }
        guard length <= UInt64(Int64.max - Int64(position)) else {
            throw ArchiveError(
                .limitExceeded, "a hole of \(length) bytes at byte \(position) would make the file larger than any file can be",
                path: rootPath, member: current.header.path)
        }
        guard lseek(current.fd, off_t(length), SEEK_CUR) >= 0 else {
            // A sparse map can declare any size (2^62 in 280 bytes): "seek: Invalid argument"
            // said nothing of that.
            guard errno == EINVAL || errno == EFBIG else { throw failure("seek", member: current.header.path) }
            throw ArchiveError(
                .io(errno: EFBIG),
                "a hole of \(length) bytes at byte \(position) would make the file larger than this file system allows "
                    + "(the member declares \(current.header.size) bytes)",
                path: rootPath, member: current.header.path)
        }
        bytes += length
        holeBytes += length
        endsInHole = true
        options.onProgress?(bytes)
    }

    private static let zeros = [UInt8](repeating: 0, count: 64 << 10)

    /// Finishes the current file: owner, permissions, times, then, when it was written under a
    /// temporary name, renames it into place (which replaces a file or a link there without
    /// following it).
    func endMember() throws(ArchiveError) {
        do {
            try finishMember()
        } catch {
            guard passesOverBegun(error) else { throw error }
        }
    }

    private func finishMember() throws(ArchiveError) {
        guard let file = current else { return }
        guard output == nil else {
            current = nil
            return
        }
        let header = file.header
        if endsInHole {
            let size = lseek(file.fd, 0, SEEK_CUR)
            guard size >= 0, ftruncate(file.fd, size) == 0 else { throw failure("set the size of", member: header.path) }
        }
        let ownership = options.restoreOwnership && isRoot
        if ownership {
            let (uid, gid) = owner(of: header)
            _ = fchown(file.fd, uid, gid)
        }
        // chmod after chown: chown clears set-id bits.
        var mode = options.restorePermissions ? header.mode & 0o7777 : header.mode & 0o777 & ~options.permissionMask
        if mode & 0o6000 != 0 && !ownership {
            mode &= ~0o6000
            record(
                ExtractWarning(
                    member: header.path, kind: .setIDBitsDropped,
                    message: "set-user-ID/set-group-ID bits dropped, since ownership is not restored"))
        }
        restoreExtendedAttributes(header) { ExtendedAttributes.write($0, to: file.fd) }
        guard fchmod(file.fd, mode_t(mode)) == 0 else { throw failure("chmod", member: header.path) }
        restoreAccessControlLists(header) { ExtendedAttributes.write($0, to: file.fd) }
        var times = Self.times(header)
        guard futimens(file.fd, &times) == 0 else { throw failure("set times", member: header.path) }
        if let temporary = file.temporary {
            // A limit that is the destination's free space counts what the extraction adds to
            // the disk: the file this member replaces gives its blocks back once it is renamed
            // over (a stream re-extracted over its own tree was refused while the disk never
            // filled). Counted only once the replacement is done: a member that fails keeps the
            // old file, and its blocks stay taken; and only for a file with no other link, whose
            // blocks another name would keep (a stream alternating a file and hard links to it
            // got its blocks back over and over, and filled the disk).
            var replaced = stat()
            let freed =
                options.countsFreeSpace
                    && RawName.withCString(file.name, { fstatat(file.parent, $0, &replaced, AT_SYMLINK_NOFOLLOW) }) == 0
                    && replaced.st_mode & S_IFMT == S_IFREG && replaced.st_nlink == 1
                ? UInt64(clamping: replaced.st_blocks) * 512 : 0
            let renamed = {
                RawName.withCString(
                    temporary, { temporary in RawName.withCString(file.name) { renameat(file.parent, temporary, file.parent, $0) } })
                    == 0
            }
            if !renamed() {
                guard errno == EISDIR || errno == ENOTEMPTY || errno == EEXIST else {
                    throw failure("rename into place", member: header.path)
                }
                // A folder is in the way: an empty one gives way, as in tar.
                try clearTheWay(for: file.name, in: file.parent, member: header.path)
                guard renamed() else { throw failure("rename into place", member: header.path) }
            }
            let (raised, overflow) = byteLimit.addingReportingOverflow(freed)
            byteLimit = overflow ? .max : raised
            replacedBytes &+= freed
        }
        current = nil
        SystemCall.close(file.fd)
    }

    /// The owner and group to give a member when ownership is restored: the local ids of the
    /// names it carries (``ExtractOptions/mapsOwnersByName``), else its numeric ids. An id that
    /// does not fit the system's type is left as it is (-1 to `fchown`) rather than cut down to
    /// another, possibly root's: `uid=4294967296` must not become 0.
    func owner(of header: TarHeader) -> (uid_t, gid_t) {
        var uid = uid_t(exactly: header.uid) ?? uid_t.max
        var gid = gid_t(exactly: header.gid) ?? gid_t.max
        if options.mapsOwnersByName {
            if let name = header.userName, let local = OwnerNames.uid(named: name) { uid = local }
            if let name = header.groupName, let local = OwnerNames.gid(named: name) { gid = local }
        }
        return (uid, gid)
    }

    /// The member being written, if the stream stopped inside it.
    var currentMember: String? { current?.header.path }

    /// Ends a failed extraction: removes a file left half-written, so that nothing partial
    /// remains, and gives the folders made so far their modes, so that none stays at 0700.
    ///
    /// When the extraction failed with `error`, what was made from bytes whose check has not
    /// passed goes too, named: their block may be damaged, and a limit or a full disk met
    /// before its check leaves that unknown (a member with a changed byte stayed behind a
    /// limit, named by nothing). A cancellation keeps it, as what came before it: the user
    /// stopped the reading, which found nothing wrong.
    func abandonCurrent(after error: (any Error)? = nil) {
        // A reader of the content that went away (`| head`) ends it as for tar, without a word.
        let readerGone = output != nil && (error as? ArchiveError)?.code == .io(errno: EPIPE)
        if let error, !(error is CancellationError), !readerGone {
            let cut = current?.header.path
            removeCurrent()
            discardUnverified()
            if let cut {
                report(
                    ArchiveError(
                        .corrupt,
                        output == nil
                            ? "removed: the extraction failed while it was being written, so it is not whole"
                            : "its content went out only in part: the extraction failed while it was being written",
                        member: cut))
            }
        } else {
            removeCurrent()
        }
        applyDirectoryMetadata()
    }

    /// Says that the tar stream's bytes before `offset` have passed their integrity checks, and
    /// that later ones have not yet. A reader that hands over decoded bytes before their block's
    /// check is verified (a pipe's, or a block too large to hold) calls it before each piece;
    /// the members made from bytes past it are removed should the extraction fail before they
    /// are verified (``abandonCurrent()``): their content or their very name may be damage.
    func verified(through offset: UInt64) {
        verifiedOffset = offset
        while unverifiedStart < unverified.count, unverified[unverifiedStart].reach <= offset {
            unverifiedStart += 1
        }
        compactUnverified()
    }

    /// Drops the entries before ``unverifiedStart`` once they are many, with their names.
    private func compactUnverified() {
        if unverifiedStart == unverified.count {
            unverified.removeAll(keepingCapacity: unverified.count <= 1024)
            unverifiedNames.removeAll(keepingCapacity: unverifiedNames.count <= 1 << 16)
            unverifiedStart = 0
        } else if unverifiedStart > 4096, unverifiedStart * 2 > unverified.count {
            let cut = unverified[unverifiedStart].name.lowerBound
            unverified.removeFirst(unverifiedStart)
            unverifiedNames.removeFirst(cut)
            for index in unverified.indices {
                unverified[index].name = (unverified[index].name.lowerBound - cut)..<(unverified[index].name.upperBound - cut)
            }
            unverifiedStart = 0
        }
    }

    /// Holds what was made for the member just ended, whose bytes end at tar offset `reach`,
    /// for removal while those bytes are not verified.
    func settle(reach: UInt64) {
        guard let (member, path) = made else { return }
        made = nil
        guard reach > verifiedOffset else { return }
        while unverifiedStart < unverified.count,
            unverified.count - unverifiedStart >= Self.maxUnverified
                || unverifiedNames.count - unverified[unverifiedStart].name.lowerBound + path.utf8.count > Self.maxUnverifiedNameBytes
        {
            unverifiedStart += 1
            untracked += 1
        }
        compactUnverified()
        var item = member
        let start = unverifiedNames.count
        unverifiedNames.append(contentsOf: path.utf8)
        item.name = start..<unverifiedNames.count
        item.reach = reach
        unverified.append(item)
    }

    /// Removes what was made from unverified bytes, last first (a folder after what it holds),
    /// and reports each member as failed, in archive order.
    private func discardUnverified() {
        let pending = unverified[unverifiedStart...]
        let names = unverifiedNames
        unverified = []
        unverifiedNames = []
        unverifiedStart = 0
        func path(of item: Unverified) -> String { String(decoding: names[item.name], as: UTF8.self) }
        for item in pending.reversed() where item.created {
            let member = path(of: item)
            guard let parts = try? components(of: member), let name = parts.last,
                let parent = try? parent(of: parts, member: member, create: false)
            else { continue }
            _ = RawName.withCString(name) { unlinkat(parent, $0, item.isDirectory ? AT_REMOVEDIR : 0) }
        }
        if let first = pending.lazy.compactMap(\.directoryIndex).first, first < directories.count {
            directories.removeSubrange(first...)
        }
        if untracked > 0 {
            report(
                ArchiveError(
                    .corrupt,
                    "\(untracked) members before these came from bytes whose integrity check was never reached, and were kept: "
                        + "more members than are held for removal (\(Self.maxUnverified), or \(Self.maxUnverifiedNameBytes >> 20) MiB "
                        + "of names) lay between two verified points (a stream whose blocks do not give their sizes is one such "
                        + "stretch)",
                    path: rootPath))
            untracked = 0
        }
        for item in pending where item.wentOut {
            report(
                ArchiveError(
                    .corrupt,
                    "its content went out from bytes whose integrity check had not been seen to pass when the damage was found, "
                        + "and may be damaged",
                    member: path(of: item)))
        }
        for item in pending where item.created {
            report(
                ArchiveError(
                    .corrupt,
                    "removed: it was made from bytes whose integrity check had not been seen to pass when the damage was "
                        + "found, so its content and name cannot be trusted",
                    member: path(of: item)))
        }
    }

    /// Counts `error` as a member not extracted, keeps it for the summary, and tells the caller
    /// and the log, under `member` (the error's own by default).
    private func report(_ error: ArchiveError, member: String? = nil) {
        failedMembers += 1
        if failures.count < ExtractSummary.keptFailures { failures.append(error) }
        options.onFailure?(error)
        options.logger.error(
            "\(TerminalSafe.message(error.message))", metadata: ["member": "\(TerminalSafe.name(member ?? error.member ?? ""))"])
    }

    /// Drops the member being written (the file begun for it) and goes on: salvage resumes after
    /// a damaged block with the members that follow it.
    func dropCurrentMember() { removeCurrent() }

    /// Salvage only: a hard link whose target is not in the destination (the damage took it) is
    /// skipped with a warning rather than ending the salvage; the salvager reports it as lost.
    var skipsLinksToMissingTargets = false

    private func removeCurrent() {
        guard let file = current else { return }
        current = nil
        // The output is the caller's, and what went out cannot be taken back.
        guard output == nil else { return }
        SystemCall.close(file.fd)
        _ = RawName.withCString(file.temporary ?? file.name) { unlinkat(file.parent, $0, 0) }
    }

    /// Applies directory modes and times, deepest first, so that adding their contents did not
    /// change the times and a read-only directory did not block its own contents.
    func finish() throws(ArchiveError) {
        removeCurrent()
        applyDirectoryMetadata()
    }

    /// What of a folder's header waits for the end: without what will not be restored, and
    /// within ``deferredAttributeBudget`` (past it, the attributes are set on the folder now).
    private func deferred(_ header: TarHeader, made name: String, in parent: Int32) -> TarHeader {
        var kept = header
        if !options.restoreExtendedAttributes { kept.extendedAttributeList = [] }
        if !options.restoreAccessControlLists || header.kind == .symbolicLink {
            kept.accessACL = nil
            kept.defaultACL = nil
        }
        let size =
            kept.extendedAttributeList.reduce(0) { $0 + $1.name.utf8.count + $1.value.count } + (kept.accessACL?.utf8.count ?? 0)
            + (kept.defaultACL?.utf8.count ?? 0)
        guard size > 0, deferredAttributeBytes + size > Self.deferredAttributeBudget else {
            deferredAttributeBytes += size
            return kept
        }
        if !kept.extendedAttributeList.isEmpty {
            let fd = RawName.withCString(name) { Platform.openat(parent, $0, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
            if fd >= 0 {
                var attributes = kept
                attributes.accessACL = nil
                attributes.defaultACL = nil
                restoreExtendedAttributes(attributes) { ExtendedAttributes.write($0, to: fd) }
                SystemCall.close(fd)
            }
            kept.extendedAttributeList = []
        }
        if kept.accessACL != nil || kept.defaultACL != nil {
            record(
                ExtractWarning(
                    member: header.path, kind: .accessControlListsNotRestored,
                    message: "ACLs not restored: the folders before it hold more than \(Self.deferredAttributeBudget >> 20) MiB of "
                        + "extended attributes and ACLs, the most kept until the folders' metadata is set at the end"))
            kept.accessACL = nil
            kept.defaultACL = nil
        }
        return kept
    }

    private func applyDirectoryMetadata() {
        // A folder stored twice takes its last header, as GNU tar gives it: the first once won,
        // so `shared/` 2777 then `shared/` 0755 left a world-writable folder. And the deepest
        // folders come first, whatever their order in the archive: a parent made 0000 before its
        // subfolder was reached left the subfolder, for a user who is not root, with 0700 and
        // the extraction's time, silently.
        var last: [ExactName: Int] = [:]
        var paths: [[String]] = []
        paths.reserveCapacity(directories.count)
        for (index, header) in directories.enumerated() {
            // By the path as written to disk: `shared/` and `./shared` are one folder.
            let parts = (try? components(of: header.path)) ?? []
            paths.append(parts)
            if !parts.isEmpty { last[ExactName(parts.joined(separator: "/"))] = index }
        }
        let order = last.values.sorted { paths[$0].count != paths[$1].count ? paths[$0].count > paths[$1].count : $0 > $1 }
        for index in order {
            let header = directories[index]
            let parts = paths[index]
            guard let parent = try? parent(of: parts, member: header.path, create: false) else { continue }
            let fd = RawName.withCString(parts.last!) { Platform.openat(parent, $0, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
            guard fd >= 0 else { continue }
            defer { SystemCall.close(fd) }
            if options.restoreOwnership && isRoot {
                let (uid, gid) = owner(of: header)
                _ = fchown(fd, uid, gid)
            }
            restoreExtendedAttributes(header) { ExtendedAttributes.write($0, to: fd) }
            let mode = options.restorePermissions ? header.mode & 0o7777 : header.mode & 0o777 & ~options.permissionMask
            _ = fchmod(fd, mode_t(mode))
            restoreAccessControlLists(header) { ExtendedAttributes.write($0, to: fd) }
            var times = Self.times(header)
            _ = futimens(fd, &times)
        }
        directories.removeAll()
        deferredAttributeBytes = 0
    }

    /// Sets the member's extended attributes through `write` when asked to; refusals become a
    /// warning.
    private func restoreExtendedAttributes(_ header: TarHeader, with write: ([ExtendedAttribute]) -> [String]) {
        guard options.restoreExtendedAttributes, !header.extendedAttributeList.isEmpty else { return }
        let patterns = options.extendedAttributePatterns
        let (chosen, left) = header.extendedAttributeList.reduce(into: ([ExtendedAttribute](), [String]())) { split, attribute in
            let matches = patterns.contains { pattern in RawName.withCString(attribute.name) { fnmatch(pattern, $0, 0) == 0 } }
            if matches { split.0.append(attribute) } else { split.1.append(attribute.name) }
        }
        if !left.isEmpty {
            record(
                ExtractWarning(
                    member: header.path, kind: .extendedAttributesNotRestored,
                    message: "extended attributes not restored, as no --xattrs-include pattern names them: "
                        + left.joined(separator: ", ")))
        }
        guard !chosen.isEmpty else { return }
        // An ACL stored as its raw attribute rewrites the permission bits when set (a read-only
        // file's owner entry is r--), and the kernel then refuses a user.* attribute set after it
        // to anyone but root: the ACLs go last, as bsdtar sets them.
        let isACL = { (attribute: ExtendedAttribute) in
            attribute.name == PosixACL.accessAttribute || attribute.name == PosixACL.defaultAttribute
        }
        let failed = write(chosen.filter { !isACL($0) } + chosen.filter(isACL))
        if !failed.isEmpty {
            record(
                ExtractWarning(
                    member: header.path, kind: .extendedAttributesNotRestored,
                    message: "extended attributes not restored: \(failed.joined(separator: ", "))"))
        }
    }

    /// Sets the member's ACLs through `write` when asked to, after its mode: a mode set later
    /// would take the ACL's mask down to its group bits, which bsdtar stores as the owning
    /// group's, not the mask's. Refusals become a warning.
    private func restoreAccessControlLists(_ header: TarHeader, with write: ([ExtendedAttribute]) -> [String]) {
        guard options.restoreAccessControlLists, header.kind != .symbolicLink else { return }
        var lists: [(text: String, attribute: String, what: String)] = []
        if let text = header.accessACL { lists.append((text, PosixACL.accessAttribute, "ACL")) }
        // A default ACL belongs to a folder; the kernel refuses one anywhere else.
        if let text = header.defaultACL, header.kind == .directory { lists.append((text, PosixACL.defaultAttribute, "default ACL")) }
        let byName = options.mapsOwnersByName
        let userID: (String) -> UInt32? = { name in
            guard byName, let id = OwnerNames.uid(named: name) else { return nil }
            return UInt32(id)
        }
        let groupID: (String) -> UInt32? = { name in
            guard byName, let id = OwnerNames.gid(named: name) else { return nil }
            return UInt32(id)
        }
        for (text, attribute, what) in lists {
            do {
                let acl = try PosixACL(text: text, userID: userID, groupID: groupID)
                let failed = write([ExtendedAttribute(name: attribute, value: acl.attributeValue)])
                if !failed.isEmpty {
                    record(
                        ExtractWarning(
                            member: header.path, kind: .accessControlListsNotRestored,
                            message: "\(what) not restored: \(failed.joined(separator: ", "))"))
                }
                // cancellation: PosixACL throws only its Problem (typed), never CancellationError
            } catch {
                record(
                    ExtractWarning(
                        member: header.path, kind: .accessControlListsNotRestored, message: "\(what) not restored: \(error)"))
            }
        }
    }

    /// Sets the mtimes the rich index records (with nanoseconds) on members already written, for
    /// readers that met the index only after the tar stream: a stream, a salvage. The tar headers
    /// carry whole seconds (``TarSerializer/tarHeader(for:)``). Each path is reached the way
    /// members are written, through folders never followed through a link, and the member itself
    /// is not followed either, and under the name it was written as (``ExtractOptions/stripComponents``);
    /// a member that is not there is skipped. Only times change.
    ///
    /// A stream of many small files meets tens of thousands of them at its end, each a path walk
    /// and a `utimensat`, with the decoders done: the entries are cut into ``ExtractOptions/parallelism``
    /// runs of consecutive members, each walked by a thread with its own folder descriptors.
    /// Setting a file's times changes nothing in its folder, so the order between runs does not
    /// matter.
    func restoreTimes(from entries: [ArchiveEntry]) {
        guard output == nil else { return }
        // A symbolic link too: AT_SYMLINK_NOFOLLOW sets its own time, as the extraction did.
        let wanted = entries.filter { $0.mtime.nanoseconds != 0 && (failedPaths.isEmpty || !failedPaths.contains(ExactName($0.path))) }
        let (root, options) = (self.root, self.options)
        let runs = min(max(1, options.parallelism), wanted.count / Self.entriesPerTimeRun)
        guard runs > 1 else {
            Self.restoreTimes(of: wanted[...], root: root, options: options)
            return
        }
        let size = (wanted.count + runs - 1) / runs
        // Blocking until every run is done, on a thread of the caller's pool, not the cooperative one.
        DispatchQueue.concurrentPerform(iterations: runs) { run in
            let range = min(run * size, wanted.count)..<min((run + 1) * size, wanted.count)
            Self.restoreTimes(of: wanted[range], root: root, options: options)
        }
    }

    /// Below this many times to set per thread, a second thread costs more than it saves.
    static let entriesPerTimeRun = 2_000

    /// ``restoreTimes(from:)``'s work for one run of `entries`, with folder descriptors of its own
    /// opened below `root`, which it shares with the other runs and does not close.
    ///
    /// Only what is still as the extraction left it gets its time: of the member's kind, and
    /// with the whole seconds of its tar header. The files have been there, under their names,
    /// since they were written, and someone who may write in the destination could have put a
    /// hard link to a file elsewhere in the place of one; that file must not get the time.
    private static func restoreTimes(of entries: ArraySlice<ArchiveEntry>, root: Int32, options: ExtractOptions) {
        var folders = DirectoryPath(root: root)
        defer { folders.closeAll() }
        for entry in entries {
            guard let path = strippedPath(entry.path, count: options.stripComponents),
                let parts = try? components(of: path, options: options), !parts.isEmpty,
                let parent = try? folders.descend(to: parts.dropLast(), create: false)
            else { continue }
            let name = parts.last!
            let item = openItself(name, in: parent)
            defer { if item >= 0 { SystemCall.close(item) } }
            var info = stat()
            let found =
                opensItself
                ? (item >= 0 ? fstat(item, &info) : -1) : RawName.withCString(name) { fstatat(parent, $0, &info, AT_SYMLINK_NOFOLLOW) }
            guard found == 0, isAsExtracted(info, entry) else { continue }
            let time = timespec(tv_sec: Int(entry.mtime.seconds), tv_nsec: Int(entry.mtime.nanoseconds))
            var times = [time, time]
            setTimes(&times, of: item, named: name, in: parent)
        }
    }

    /// Whether `info` is what extracting `entry` left: its kind, and its time in whole seconds
    /// (or already the entry's own).
    static func isAsExtracted(_ info: stat, _ entry: ArchiveEntry) -> Bool {
        let type: mode_t
        switch entry.kind {
        case .directory: type = S_IFDIR
        case .symbolicLink: type = S_IFLNK
        case .regular, .hardLink: type = S_IFREG
        default: return false
        }
        return info.st_mode & S_IFMT == type && Int64(info.st_mtim.tv_sec) == Int64(entry.mtime.seconds)
            && (info.st_mtim.tv_nsec == 0 || Int64(info.st_mtim.tv_nsec) == Int64(entry.mtime.nanoseconds))
    }

    /// A descriptor of `name` in `parent` itself, a link not followed (Linux's O_PATH), through
    /// which its owner and times are set without a second look-up of the name; -1 where the
    /// system has none, or it cannot be opened so (then by name).
    static func openItself(_ name: String, in parent: Int32) -> Int32 {
        guard opensItself else { return -1 }
        return RawName.withCString(name) { Platform.openat(parent, $0, amk_o_path() | O_NOFOLLOW | O_CLOEXEC) }
    }

    /// Whether ``openItself(_:in:)`` can give such a descriptor here: when it can and does not,
    /// the name no longer leads to what it did, and nothing is set through it.
    static let opensItself = amk_o_path() != 0 && amk_at_empty_path() != 0

    /// Sets `times` on `item` (from ``openItself(_:in:)``), or on `name` in `parent`, not
    /// followed, when there is no such descriptor or the kernel cannot use it (before Linux 5.8,
    /// `utimensat` refuses AT_EMPTY_PATH).
    static func setTimes(_ times: inout [timespec], of item: Int32, named name: String, in parent: Int32) {
        if item >= 0, utimensat(item, "", &times, amk_at_empty_path()) == 0 || errno != EINVAL { return }
        _ = RawName.withCString(name) { utimensat(parent, $0, &times, AT_SYMLINK_NOFOLLOW) }
    }

    private static func times(_ header: TarHeader) -> [timespec] {
        let time = timespec(tv_sec: Int(header.mtime.seconds), tv_nsec: Int(header.mtime.nanoseconds))
        return [time, time]
    }
}

/// The file an ``Extractor`` is writing. A class, so that reaching it for every piece of content
/// costs one reference rather than a copy of the header and names: as a tuple it was copied
/// through the runtime's generic value witnesses, a measurable share of extracting small files.
private final class OpenFile {
    let fd: Int32
    let parent: Int32
    /// The name it is written under when it replaces something; nil when it was created under its
    /// own name.
    let temporary: String?
    let name: String
    let header: TarHeader

    init(fd: Int32, parent: Int32, temporary: String?, name: String, header: TarHeader) {
        self.fd = fd
        self.parent = parent
        self.temporary = temporary
        self.name = name
        self.header = header
    }
}

/// The folders from the destination down to the folder of the last member written, with the
/// descriptors of the deepest few kept open.
///
/// Archives list members folder by folder, so consecutive members share most of their path:
/// keeping those descriptors open turns the walk from the root for every member (quadratic in
/// depth over a deep tree) into one `openat` per folder that changed. At most ``maxOpen`` stay
/// open, the deepest ones, so a deep tree does not hold hundreds of descriptors; a member that
/// leaves the path above them walks down again from the nearest open one.
struct DirectoryPath {
    enum Failure: Error {
        /// The component is a link or not a folder.
        case link(String)
        case system(operation: String, name: String, errno: Int32)
    }

    static let maxOpen = 16

    private let root: Int32
    /// Each folder of the path and its descriptor, or -1 once closed to respect ``maxOpen``.
    private var levels: [(name: String, fd: Int32)] = []
    /// Levels below this index are closed.
    private var firstOpen = 0

    init(root: Int32) { self.root = root }

    /// The descriptor of the folder at `components` below the root, creating missing folders when
    /// `create` is set. Owned by the path: valid until the next call.
    mutating func descend(to components: ArraySlice<String>, create: Bool) throws(Failure) -> Int32 {
        var shared = 0
        for (held, wanted) in zip(levels, components) {
            guard UTF8Bytes.equal(held.name, wanted) else { break }
            shared += 1
        }
        truncate(to: shared)
        // Reopen the shared part's closed levels from the deepest open ancestor.
        if shared > 0 && levels[shared - 1].fd < 0 {
            let base = levels.lastIndex { $0.fd >= 0 }.map { $0 + 1 } ?? 0
            for index in base..<shared {
                levels[index].fd = try open(levels[index].name, in: index == 0 ? root : levels[index - 1].fd, create: false)
            }
            firstOpen = min(firstOpen, base)
        }
        for part in components.dropFirst(shared) {
            levels.append((part, try open(part, in: levels.last?.fd ?? root, create: create)))
            trim()
        }
        trim()
        return levels.last?.fd ?? root
    }

    /// Closes the descriptors above the deepest ``maxOpen``.
    private mutating func trim() {
        while levels.count - firstOpen > Self.maxOpen {
            if levels[firstOpen].fd >= 0 { SystemCall.close(levels[firstOpen].fd) }
            levels[firstOpen].fd = -1
            firstOpen += 1
        }
    }

    private func open(_ part: String, in dir: Int32, create: Bool) throws(Failure) -> Int32 {
        var next = RawName.withCString(part) { Platform.openat(dir, $0, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
        if next < 0 && errno == ENOENT && create {
            if RawName.withCString(part, { mkdirat(dir, $0, 0o755) }) != 0 && errno != EEXIST {
                throw .system(operation: "mkdir", name: part, errno: errno)
            }
            next = RawName.withCString(part) { Platform.openat(dir, $0, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
        }
        guard next >= 0 else {
            let code = errno
            if code == ELOOP || code == ENOTDIR { throw .link(part) }
            throw .system(operation: "cannot open directory", name: part, errno: code)
        }
        return next
    }

    private mutating func truncate(to count: Int) {
        while levels.count > count {
            let last = levels.removeLast()
            if last.fd >= 0 { SystemCall.close(last.fd) }
        }
        firstOpen = min(firstOpen, count)
    }

    mutating func closeAll() { truncate(to: 0) }
}
