/// An incremental push parser for tar streams.
///
/// Feed it slices of a tar stream of any size with ``consume(_:handler:)``; it calls the
/// handler with each global header, member, run of content bytes and the end marker, in stream
/// order. Content is handed over as slices of the caller's buffer, never copied, and header
/// blocks are parsed in place unless one straddles two calls, so the parser can run over
/// gigabytes at memory speed.
///
/// It reads POSIX ustar and pax (`x` records `path`, `linkpath`, `size`, `mtime` with a
/// fraction, `uid`, `gid`, `uname`, `gname`; unknown keywords are ignored), pax global
/// headers (`g`: reported as events; `mtime`, `uid`, `gid`, `uname` and `gname` also apply to
/// the following members unless their own headers override them), GNU `L`/`K` long names,
/// GNU base-256 numbers and pre-POSIX v7 headers. Sparse members, in each form GNU tar writes (old
/// GNU `S` headers with their extension blocks, pax 0.0, 0.1 and 1.0, which bsdtar and macOS's
/// `tar` write too), are read as the files they stand for: the member's size is the file's, and
/// the holes arrive as ``Event/hole(length:)`` between the stored runs, once the map has been held
/// to the stored bytes (see ``TarMember/isSparse``).
///
/// The input is untrusted: every checksum is verified (the unsigned or the signed sum, as GNU
/// tar accepts), every field and pax record is bounds-checked, extended headers are capped by
/// ``Limits``, and every failure is a ``TarError`` naming the offset of the header block
/// concerned. After an error the parser stays failed and rethrows it. Data that is no tar at all
/// (empty, or a first block with neither a valid checksum nor the ustar magic) is
/// `.notATarStream` rather than damage.
///
/// Names are bytes, and the kernel reads them up to the first NUL, so no name handed out holds
/// one: ustar fields and GNU long names end at their first NUL, and a pax `path`, `linkpath`,
/// `uname` or `gname` value (or any keyword) holding a NUL is refused. Names that are not valid
/// UTF-8 keep their bytes (``RawName``), so they are written back as they were stored.
///
/// After the end marker (two zero blocks) it reports ``Event/end(offset:)`` once and ignores
/// everything that follows, since an index may follow the tar data. A single zero block
/// followed by a header is skipped, as GNU tar does.
public struct TarParser: Sendable {
    /// Bounds on what a stream may make the parser buffer.
    public struct Limits: Sendable {
        /// The largest pax extended header (`x` or `g`) accepted, in bytes.
        public var maxPaxHeaderSize: Int
        /// The longest path or link target accepted, in bytes, from any header kind.
        public var maxPathLength: Int
        /// The most runs of data a sparse member's map may list: the map is kept whole (16 bytes
        /// a run) until the member ends, so that it can be checked before any content is handed on.
        public var maxSparseRuns: Int

        /// Creates limits; the defaults are far above anything a real archive needs.
        public init(maxPaxHeaderSize: Int = 1 << 20, maxPathLength: Int = 64 * 1024, maxSparseRuns: Int = 1 << 20) {
            self.maxPaxHeaderSize = maxPaxHeaderSize
            self.maxPathLength = maxPathLength
            self.maxSparseRuns = maxSparseRuns
        }
    }

    /// Something found in the stream. Buffers are valid only during the handler call.
    public enum Event {
        /// A pax global header's records, in order, and the offset of its header block.
        case globalHeader([(key: String, value: String)], offset: UInt64)
        /// A member's header blocks were read; its content follows as `data` events.
        case member(TarMember)
        /// Content bytes of the current member, in order; `offset` is that of the first byte.
        case data(UnsafeRawBufferPointer, offset: UInt64)
        /// `length` zero bytes of the current member's content that the stream does not store: a
        /// hole of a sparse member, in its place between `data` events. A reader that wants the
        /// content takes it as that many zeros; one that writes a file can leave a hole there.
        case hole(length: UInt64)
        /// The current member's content is complete (sent immediately for size 0).
        case memberEnd
        /// The end-of-archive marker; `offset` is that of its first zero block.
        case end(offset: UInt64)
    }

    private enum ExtendedKind: Sendable {
        case pax, global, longName, longLink
    }

    private enum State: Sendable {
        /// Expecting a header block (possibly partly buffered in `blockBuffer`).
        case header
        /// One zero block was seen at this offset; the next block decides whether it ends.
        case zeroBlock(UInt64)
        /// Collecting the data of an extended header into `extendedBuffer`.
        case extended(ExtendedKind, blockOffset: UInt64, remaining: UInt64, padding: Int)
        /// Passing content through (a sparse member's stored runs, with ``sparse`` set).
        case content(remaining: UInt64, padding: Int)
        /// Reading an old GNU sparse member's extension blocks (``sparseStart`` holds the member).
        case sparseExtension
        /// Reading a pax 1.0 sparse map at the head of a member's content into ``sparseText``;
        /// `remaining` counts the stored bytes left, map included.
        case sparseMap(remaining: UInt64, padding: Int)
        /// Skipping the zero padding after content or extended data.
        case padding(Int)
        case end
        case failed
    }

    /// Extended-header values waiting for the ustar block they apply to.
    private struct Pending: Sendable {
        var firstOffset: UInt64?
        var overrides = TarHeader.Overrides()
        /// Keywords the `x` header gave an empty value: their global defaults do not apply.
        var cleared: Set<String> = []
        var hasPax = false
        var sparse = PaxSparse()
        /// The name and link target of GNU `L` and `K` records, kept apart from the pax ones:
        /// see ``TarParser/name(pax:gnu:what:at:)``.
        var longName: String?
        var longLink: String?
    }

    /// A sparse member whose map is still being read: announced once it is whole and checked.
    private struct SparseStart: Sendable {
        var member: TarMember
        var map: SparseMap
        /// Bytes the stream stores for the content, map included when it is there.
        var storedSize: UInt64
        var padding: Int
    }

    /// Where the content of the sparse member being read has got to.
    private struct SparseCursor: Sendable {
        var map: SparseMap
        /// The next run to start.
        var next = 0
        /// Stored bytes left in the current run.
        var left: UInt64 = 0
        /// Bytes of the file handed on so far, holes included.
        var position: UInt64 = 0
    }

    private let limits: Limits
    private var state: State = .header
    private var consumed: UInt64 = 0
    /// Start of the member being read, for naming it when the stream ends inside it.
    private var currentMember: (offset: UInt64, path: String, size: UInt64)?
    private var blockBuffer: [UInt8] = []
    private var extendedBuffer: [UInt8] = []
    private var pending = Pending()
    private var globals = TarHeader.Overrides()
    private var failure: TarError?
    private var sparseStart: SparseStart?
    private var sparseText: SparseMapText?
    private var sparse: SparseCursor?

    /// Creates a parser at the start of a stream.
    public init(limits: Limits = .init()) {
        self.limits = limits
    }

    /// The number of bytes consumed so far (all of every slice passed to `consume`).
    public var offset: UInt64 { consumed }

    /// Whether the end-of-archive marker has been seen.
    public var isAtEnd: Bool {
        if case .end = state { return true }
        return false
    }

    /// Parses the next slice of the stream, calling `handler` for each event it completes.
    ///
    /// - Throws: a ``TarError`` for malformed input, or whatever `handler` throws. Either way
    ///   the parser is then failed: later calls throw the same ``TarError`` (or a
    ///   `.invalidValue` error after a handler error).
    public mutating func consume(_ bytes: UnsafeRawBufferPointer, handler: (Event) throws -> Void) throws {
        try checkNotFailed()
        do {
            try run(bytes, handler: handler)
        } catch let error as TarError {
            state = .failed
            failure = error
            throw error
        } catch {
            state = .failed
            throw error
        }
    }

    /// Declares the end of input.
    ///
    /// - Parameter requireEndMarker: when `false`, a stream that stops cleanly between members
    ///   (or after a single zero block) without the end-of-archive marker is accepted.
    /// - Throws: ``TarError`` `.truncated` naming the offset of the incomplete header, or of the
    ///   first header block of the incomplete member, or where the end marker should be.
    public mutating func finish(requireEndMarker: Bool = true) throws {
        try checkNotFailed()
        let error: TarError?
        switch state {
        case .end:
            error = nil
        case .header where consumed == 0:
            error =
                requireEndMarker
                ? TarError(code: .notATarStream, message: "not a tar stream: it is empty", offset: 0)
                : nil
        case .header where blockBuffer.isEmpty && pending.firstOffset == nil,
            .zeroBlock where blockBuffer.isEmpty:
            error =
                requireEndMarker
                ? TarError(code: .truncated, message: "stream ends without the end-of-archive marker", offset: consumed)
                : nil
        case .header, .zeroBlock:
            if consumed == UInt64(blockBuffer.count), !blockBuffer.isEmpty, !Self.hasUstarMagic(blockBuffer) {
                // Less than one block in all, and not the start of a ustar header.
                error = TarError(
                    code: .notATarStream,
                    message:
                        "not a tar stream: it ends after \(blockBuffer.count) bytes, inside the first 512-byte header block, which has no ustar magic",
                    offset: 0
                )
            } else if let first = pending.firstOffset {
                error = TarError(code: .truncated, message: "stream ends inside the header blocks of a member", offset: first)
            } else {
                let blockOffset = consumed - UInt64(blockBuffer.count)
                error = TarError(
                    code: .truncated, message: "stream ends inside a header block (\(blockBuffer.count) of 512 bytes)", offset: blockOffset)
            }
        case .extended(_, let blockOffset, let remaining, _):
            error = TarError(
                code: .truncated, message: "stream ends inside an extended header (\(remaining) bytes missing)",
                offset: pending.firstOffset ?? blockOffset)
        case .sparseExtension, .sparseMap:
            let location = sparseStart?.member.headerOffset ?? consumed
            error = TarError(code: .truncated, message: "stream ends inside the sparse map of a member", offset: location)
        case .content(let remaining, _):
            let member = currentMember ?? (consumed, "?", remaining)
            error = TarError(
                code: .truncated,
                message:
                    "member \"\(UstarBlock.escaped(member.path))\" is truncated: \(member.size - remaining) of \(member.size) content bytes present",
                offset: member.offset
            )
        case .padding:
            let location = currentMember?.offset ?? pending.firstOffset ?? consumed
            error = TarError(code: .truncated, message: "stream ends inside the padding after a member", offset: location)
        case .failed:
            error = TarError(code: .invalidValue, message: "parser cannot continue after an earlier error")
        }
        if let error {
            state = .failed
            failure = error
            throw error
        }
    }

    private func checkNotFailed() throws {
        if let failure { throw failure }
        if case .failed = state {
            throw TarError(code: .invalidValue, message: "parser cannot continue after an earlier error")
        }
    }

    // MARK: - The state machine

    private mutating func run(_ bytes: UnsafeRawBufferPointer, handler: (Event) throws -> Void) throws {
        var index = 0
        let count = bytes.count
        while index < count {
            let available = count - index
            switch state {
            case .end:
                // Whatever follows the marker (an index, record padding) is not tar data.
                consumed += UInt64(available)
                return

            case .failed:
                return

            case .content(let remaining, let padding):
                var take = Int(min(remaining, UInt64(available)))
                if sparse != nil { take = Int(min(UInt64(take), try startRun(handler: handler))) }
                let start = consumed
                let left = remaining - UInt64(take)
                state = left == 0 ? .padding(padding) : .content(remaining: left, padding: padding)
                index += take
                consumed += UInt64(take)
                if sparse != nil {
                    sparse!.left -= UInt64(take)
                    sparse!.position += UInt64(take)
                }
                try handler(.data(UnsafeRawBufferPointer(rebasing: bytes[(index - take)..<index]), offset: start))
                if left == 0 {
                    if padding == 0 {
                        state = .header
                        currentMember = nil
                    }
                    if sparse != nil { try endSparse(handler: handler) }
                    try handler(.memberEnd)
                }

            case .sparseMap(let remaining, let padding):
                var used = 0
                // Taken out, so that adding runs does not copy the map held in `self`.
                var text = sparseText!
                sparseText = nil
                let blockOffset = sparseStart!.member.headerOffset
                while used < available, UInt64(used) < remaining, !(text.isComplete && text.consumed % UInt64(UstarBlock.size) == 0) {
                    try text.read(bytes[index + used], limit: limits.maxSparseRuns, at: blockOffset)
                    used += 1
                }
                sparseText = text
                index += used
                consumed += UInt64(used)
                let left = remaining - UInt64(used)
                if text.isComplete && text.consumed % UInt64(UstarBlock.size) == 0 {
                    var start = sparseStart!
                    sparseStart = nil
                    sparseText = nil
                    start.map.runs = text.map.runs
                    start.member.dataOffset = consumed
                    try beginSparse(start.member, map: start.map, storedData: left, padding: padding, handler: handler)
                } else if left == 0 {
                    throw TarError(
                        code: .badField,
                        message: "sparse map runs past the \(sparseStart!.storedSize) bytes the member stores", offset: blockOffset)
                } else {
                    state = .sparseMap(remaining: left, padding: padding)
                }

            case .padding(let remaining):
                let take = min(remaining, available)
                index += take
                consumed += UInt64(take)
                if take == remaining {
                    state = .header
                    currentMember = nil
                } else {
                    state = .padding(remaining - take)
                }

            case .extended(let kind, let blockOffset, let remaining, let padding):
                let take = Int(min(remaining, UInt64(available)))
                extendedBuffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[index..<(index + take)]))
                index += take
                consumed += UInt64(take)
                let left = remaining - UInt64(take)
                if left > 0 {
                    state = .extended(kind, blockOffset: blockOffset, remaining: left, padding: padding)
                } else {
                    state = padding == 0 ? .header : .padding(padding)
                    try finishExtended(kind, blockOffset: blockOffset, handler: handler)
                }

            case .header, .zeroBlock, .sparseExtension:
                if blockBuffer.isEmpty, available >= UstarBlock.size {
                    let blockOffset = consumed
                    index += UstarBlock.size
                    consumed += UInt64(UstarBlock.size)
                    let block = UnsafeRawBufferPointer(rebasing: bytes[(index - UstarBlock.size)..<index])
                    try headerBlock(block, at: blockOffset, handler: handler)
                } else {
                    if blockBuffer.capacity < UstarBlock.size { blockBuffer.reserveCapacity(UstarBlock.size) }
                    let take = min(UstarBlock.size - blockBuffer.count, available)
                    blockBuffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[index..<(index + take)]))
                    index += take
                    consumed += UInt64(take)
                    if blockBuffer.count == UstarBlock.size {
                        let blockOffset = consumed - UInt64(UstarBlock.size)
                        // Move the storage out (no copy) so the block can be read while
                        // `self` is mutated, then hand it back to be reused.
                        var block: [UInt8] = []
                        swap(&block, &blockBuffer)
                        try block.withUnsafeBytes { block in
                            try headerBlock(block, at: blockOffset, handler: handler)
                        }
                        block.removeAll(keepingCapacity: true)
                        swap(&block, &blockBuffer)
                    }
                }
            }
        }
    }

    private mutating func headerBlock(_ block: UnsafeRawBufferPointer, at blockOffset: UInt64, handler: (Event) throws -> Void) throws {
        if case .sparseExtension = state {
            try sparseExtensionBlock(block, at: blockOffset, handler: handler)
            return
        }
        if UstarBlock.isZero(block) {
            if let first = pending.firstOffset {
                throw TarError(
                    code: .badField, message: "extended header at offset \(first) is followed by a zero block instead of a member header",
                    offset: blockOffset)
            }
            if case .zeroBlock(let first) = state {
                state = .end
                try handler(.end(offset: first))
            } else {
                state = .zeroBlock(blockOffset)
            }
            return
        }
        // A lone zero block followed by a header ends the archive there: GNU tar (which warns "A
        // lone zero block"), bsdtar and Python's tarfile all stop at it, so a member after it is
        // one they never show. Reading on extracted it where they saw nothing.
        if case .zeroBlock(let first) = state {
            state = .end
            try handler(.end(offset: first))
            return
        }
        state = .header

        let fields = try Self.decodeBlock(block, at: blockOffset)
        let dataStart = blockOffset + UInt64(UstarBlock.size)

        func startExtended(_ kind: ExtendedKind, limit: Int, what: String) throws(TarError) {
            guard limit >= 0, fields.size <= UInt64(limit) else {
                throw TarError(
                    code: .tooLarge, message: "\(what) of \(fields.size) bytes exceeds the limit of \(limit) bytes", offset: blockOffset)
            }
            extendedBuffer.removeAll(keepingCapacity: true)
            extendedBuffer.reserveCapacity(Int(fields.size))
            let padding = TarEncoder.padding(forContentSize: fields.size)
            if fields.size == 0 {
                state = padding == 0 ? .header : .padding(padding)
            } else {
                state = .extended(kind, blockOffset: blockOffset, remaining: fields.size, padding: padding)
            }
        }

        /// Refuses a second header of one kind for the same member. Stock readers disagree on it:
        /// for two `x` headers GNU tar and bsdtar take only the last one's records and Python's
        /// tarfile merges both (so a `size` in the first hid a member from one reader or the
        /// other); for two long names Python takes the first and GNU tar the last.
        func refuseSecond(_ seen: Bool, _ what: String) throws(TarError) {
            guard seen else { return }
            throw TarError(
                code: .badField,
                message: "a second \(what) for the member whose headers start at offset \(pending.firstOffset ?? blockOffset): "
                    + "tar readers disagree on which one applies",
                offset: blockOffset)
        }
        switch fields.typeflag {
        case UInt8(ascii: "x"), UInt8(ascii: "X"):
            try refuseSecond(pending.hasPax, "pax extended header")
            if pending.firstOffset == nil { pending.firstOffset = blockOffset }
            pending.hasPax = true
            try startExtended(.pax, limit: limits.maxPaxHeaderSize, what: "pax extended header")
            if fields.size == 0 { try finishExtended(.pax, blockOffset: blockOffset, handler: handler) }
        case UInt8(ascii: "g"):
            try startExtended(.global, limit: limits.maxPaxHeaderSize, what: "pax global header")
            if fields.size == 0 { try finishExtended(.global, blockOffset: blockOffset, handler: handler) }
        case UInt8(ascii: "L"), UInt8(ascii: "K"):
            let kind: ExtendedKind = fields.typeflag == UInt8(ascii: "L") ? .longName : .longLink
            // The first one's name is set (if only to "") before another header can be read.
            try refuseSecond(
                (kind == .longName ? pending.longName : pending.longLink) != nil,
                kind == .longName ? "GNU long name" : "GNU long link target")
            if pending.firstOffset == nil { pending.firstOffset = blockOffset }
            // The GNU long-name data includes a terminating NUL.
            let limit = limits.maxPathLength < Int.max ? limits.maxPathLength + 1 : limits.maxPathLength
            try startExtended(kind, limit: limit, what: "GNU long name")
            if fields.size == 0 { try finishExtended(kind, blockOffset: blockOffset, handler: handler) }
        default:
            var merged = pending.overrides.merged(over: globals, except: pending.cleared)
            let namedAt = pending.firstOffset ?? blockOffset
            merged.path = try Self.name(pax: merged.path, gnu: pending.longName, what: "path", at: namedAt)
            merged.linkPath = try Self.name(pax: merged.linkPath, gnu: pending.longLink, what: "link target", at: namedAt)
            merged.extendedAttributes = pending.overrides.extendedAttributes
            merged.extendedAttributePositions = pending.overrides.extendedAttributePositions
            merged.accessACL = pending.overrides.accessACL
            merged.defaultACL = pending.overrides.defaultACL
            // A sparse member's real name: held below to the rules of every name.
            if let name = pending.sparse.name { merged.path = name }
            // The old GNU sparse layout lives where the POSIX format keeps the name's prefix: GNU
            // tar and bsdtar read an `S` header with the POSIX (or no) magic as a regular file,
            // prefix and content as they stand. Reading a map there made amk write a file of the
            // archive's chosen size, its bytes where the map said, where they wrote the 512 bytes.
            let oldGNUSparse = fields.typeflag == UInt8(ascii: "S") && fields.format == .gnu
            var fields = fields
            if fields.typeflag == UInt8(ascii: "S") { fields.typeflag = UInt8(ascii: "0") }
            var header = TarHeader(fields: fields, overrides: merged)
            let headerOffset = pending.firstOffset ?? blockOffset
            // A regular file by its type whose name ends in "/" is a folder (the pre-POSIX
            // spelling), which holds no content: one that claims some is damage. Read as a
            // folder, its content was skipped without a word (GNU tar and bsdtar refuse it), and
            // any member hidden in that content was never seen by amk but extracted by them.
            // (A sparse member's own check names that case.)
            if header.kind == .directory, TarEntryKind(typeflag: fields.typeflag) == .regular, header.size > 0, !oldGNUSparse,
                !pending.sparse.seen
            {
                throw TarError(
                    code: .badField,
                    message: "member '\(UstarBlock.escaped(header.path, limit: 100))' is a regular file by its type and a folder by "
                        + "its name (ending in '/'), yet claims \(header.size) bytes of content",
                    offset: headerOffset)
            }
            // Content for a link, a device or a FIFO: GNU tar, bsdtar and Python read the next
            // header right after a hard link's (so a member hidden in that "content" is a member
            // to them and not to a reader that skips it), and disagree among themselves on the
            // others. No writer stores content there; the member is refused as damage.
            if header.size > 0, !oldGNUSparse, !pending.sparse.seen, Self.holdsNoContent(TarEntryKind(typeflag: fields.typeflag)) {
                throw TarError(
                    code: .badField,
                    message: "member '\(UstarBlock.escaped(header.path, limit: 100))' is a \(Self.kindWords(header.kind)), "
                        + "yet claims \(header.size) bytes of content: tar readers disagree on where the next member starts",
                    offset: headerOffset)
            }
            let hasPax = pending.hasPax
            let paxSparse = pending.sparse
            pending = Pending()
            if header.path.utf8.count > limits.maxPathLength {
                throw TarError(
                    code: .tooLarge, message: "path of \(header.path.utf8.count) bytes exceeds the limit of \(limits.maxPathLength)",
                    offset: headerOffset)
            }
            // The stream position must stay representable through the content and padding.
            let padding = TarEncoder.padding(forContentSize: header.size)
            guard header.size <= UInt64.max - dataStart - UInt64(padding) else {
                throw TarError(code: .tooLarge, message: "member size \(header.size) is beyond any stream", offset: headerOffset)
            }
            if oldGNUSparse || paxSparse.seen {
                try beginSparseHeader(
                    &header, block: block, oldGNU: oldGNUSparse, pax: paxSparse, headerOffset: headerOffset, dataStart: dataStart,
                    padding: padding, hasPax: hasPax, handler: handler)
                return
            }
            let member = TarMember(header: header, headerOffset: headerOffset, dataOffset: dataStart, hasPaxHeader: hasPax)
            if header.size == 0 {
                state = .header
                try handler(.member(member))
                try handler(.memberEnd)
            } else {
                state = .content(remaining: header.size, padding: padding)
                currentMember = (headerOffset, header.path, header.size)
                try handler(.member(member))
            }
        }
    }

    private mutating func finishExtended(_ kind: ExtendedKind, blockOffset: UInt64, handler: (Event) throws -> Void) throws {
        var data: [UInt8] = []
        swap(&data, &extendedBuffer)
        defer {
            data.removeAll(keepingCapacity: true)
            swap(&data, &extendedBuffer)
        }
        switch kind {
        case .longName, .longLink:
            // The name ends at its first NUL, as the kernel reads it: whatever follows the NUL
            // never reaches the name.
            let end = data.firstIndex(of: 0) ?? data.count
            // Empty, it is read as the header's own name by some readers and as "." by GNU tar.
            guard end > 0 else {
                throw TarError(
                    code: .badField,
                    message:
                        "empty GNU long \(kind == .longName ? "name" : "link target"): tar readers disagree on which name the member has",
                    offset: blockOffset)
            }
            let name = RawName.decode(data[..<end])
            if kind == .longName {
                pending.longName = name
            } else {
                pending.longLink = name
            }
        case .pax:
            var overrides = pending.overrides
            var cleared = pending.cleared
            var sparse = pending.sparse
            try data.withUnsafeBytes { buffer in
                try PaxRecords.parse(buffer, headerOffset: blockOffset) { key, value throws(TarError) in
                    if key.hasPrefix("GNU.sparse.") {
                        try applySparse(key: key, value: value, to: &sparse, headerOffset: blockOffset)
                        return
                    }
                    if value.isEmpty {
                        // A member's name emptied: POSIX (bsdtar) reads the ustar header's name
                        // then, GNU tar "." and Python's tarfile "", three readings of one member.
                        if key == "path" || key == "linkpath" {
                            throw TarError(
                                code: .badPaxRecord,
                                message: "pax \(key) record with an empty value: tar readers disagree on which name the member has",
                                offset: blockOffset)
                        }
                        cleared.insert(key)
                    }
                    _ = try apply(key: key, value: value, to: &overrides, global: false, headerOffset: blockOffset)
                }
            }
            pending.overrides = overrides
            pending.cleared = cleared
            pending.sparse = sparse
        case .global:
            var records: [(key: String, value: String)] = []
            var overrides = globals
            try data.withUnsafeBytes { buffer in
                try PaxRecords.parse(buffer, headerOffset: blockOffset) { key, value throws(TarError) in
                    let text = try apply(key: key, value: value, to: &overrides, global: true, headerOffset: blockOffset)
                    records.append((key, text))
                }
            }
            globals = overrides
            try handler(.globalHeader(records, offset: blockOffset))
        }
    }

    /// Applies one pax record and returns its value as text. An empty value deletes the keyword:
    /// in a `g` header it drops the default, in an `x` header it also hides the default for this
    /// member, so the ustar field is used. In a global header `path`, `linkpath` and `size` are
    /// refused: GNU tar and Python's tarfile apply them, bsdtar does not, and no writer uses them;
    /// `uid`, `gid`, `uname`, `gname` and `mtime` are checked and not applied, as GNU tar and
    /// bsdtar extract.
    ///
    /// A name (`path`, `linkpath`, `uname`, `gname`) holding a NUL byte is refused, in `x` and
    /// `g` headers alike: the kernel and every C reader stop at the NUL, so the name checked
    /// here ("..\0/x") would not be the name acted on (".."). Values are decoded byte for byte
    /// (``RawName``): GNU tar and bsdtar write a name that is not UTF-8 as its raw bytes, with or
    /// without `hdrcharset=BINARY`, so a path, a link target or an owner name keeps its bytes.
    private func apply(
        key: String, value bytes: UnsafeRawBufferPointer, to overrides: inout TarHeader.Overrides, global: Bool, headerOffset: UInt64
    ) throws(TarError) -> String {
        let value = RawName.decode(bytes)
        func bad(_ what: String) -> TarError { Self.recordError(key: key, value: value, what, at: headerOffset) }
        func number() throws(TarError) -> UInt64? {
            if value.isEmpty { return nil }
            guard let number = PaxRecords.parseDecimal(value) else { throw bad("not a decimal number") }
            return number
        }
        func checkedPath() throws(TarError) -> String? {
            if value.isEmpty { return nil }
            guard bytes.count <= limits.maxPathLength else {
                throw TarError(
                    code: .tooLarge, message: "pax \(key) of \(bytes.count) bytes exceeds the limit of \(limits.maxPathLength)",
                    offset: headerOffset)
            }
            return value
        }
        switch key {
        case "path", "linkpath", "uname", "gname":
            if let nul = bytes.firstIndex(of: 0) { throw bad(Self.nulInName(at: nul, of: bytes.count)) }
        default:
            break
        }
        if global, key == "path" || key == "linkpath" || key == "size" {
            // GNU tar and Python's tarfile apply it to every member that follows (one name for
            // all, or a size that hides members in content or shows content as members), bsdtar
            // ignores it: readers that disagree on what an archive holds.
            throw TarError(
                code: .badPaxRecord,
                message: "pax keyword \"\(key)\" in a global header: tar readers disagree on whether it applies to every member",
                offset: headerOffset)
        }
        switch key {
        case "path" where !global:
            overrides.path = try checkedPath()
        case "linkpath" where !global:
            overrides.linkPath = try checkedPath()
        case "size" where !global: overrides.size = try number()
        case _ where global && (key == "uid" || key == "gid" || key == "uname" || key == "gname" || key == "mtime"):
            // Checked, not applied. GNU tar and bsdtar extract a member with its own owner and
            // time whatever a global header says, and a member read alone (`amk extract A m`,
            // from the index) never sees a global header: applied, a global `uname=root` made
            // a full extraction write a set-user-ID root file that a selection of the same
            // member, `list` and `verify` gave its own uid 1000.
            if key == "mtime" {
                guard value.isEmpty || PaxRecords.parseTime(value) != nil else { throw bad("not a decimal time") }
            } else if key == "uid" || key == "gid" {
                _ = try number()
            }
        case "uid": overrides.uid = try number()
        case "gid": overrides.gid = try number()
        case "uname": overrides.userName = value.isEmpty ? nil : value
        case "gname": overrides.groupName = value.isEmpty ? nil : value
        case "mtime":
            if value.isEmpty {
                overrides.mtime = nil
            } else {
                guard let time = PaxRecords.parseTime(value) else { throw bad("not a decimal time") }
                overrides.mtime = time
            }
        case "SCHILY.acl.access" where !global: overrides.accessACL = value.isEmpty ? nil : value
        case "SCHILY.acl.default" where !global: overrides.defaultACL = value.isEmpty ? nil : value
        case _ where !global && key.utf8.starts(with: PaxRecords.xattrPrefix.utf8) && key.utf8.count > PaxRecords.xattrPrefix.utf8.count:
            // Cut at the byte, not the character: a combining mark after the prefix's dot is one
            // `Character` with it, and `hasPrefix`/`dropFirst` would miss the record or eat the mark.
            let name = PaxRecords.xattrName(RawName.encode(key).dropFirst(PaxRecords.xattrPrefix.utf8.count))
            overrides.setExtendedAttribute(name: name, value: Array(bytes))
        default:
            if key.hasPrefix("GNU.sparse.") {
                // Only a member's own header can say how its content is laid out.
                throw TarError(
                    code: .badPaxRecord,
                    message: "pax keyword \"\(UstarBlock.escaped(key))\" in a global header: a sparse map belongs to one member",
                    offset: headerOffset)
            }
        }
        return value
    }

    /// The error for a pax record whose value is wrong: the keyword, why, and the value (escaped
    /// and cut short, as it comes from the archive).
    private static func recordError(key: String, value: String, _ what: String, at headerOffset: UInt64) -> TarError {
        TarError(
            code: .badPaxRecord,
            message: "pax keyword \"\(UstarBlock.escaped(key))\": \(what) (\"\(UstarBlock.escaped(value, limit: 40))\")",
            offset: headerOffset)
    }

    /// The name a member's pax record and GNU long-name record give together.
    ///
    /// Stock readers disagree when both are there and differ: GNU tar takes the pax name
    /// whatever the order, bsdtar and Python's tarfile whichever record comes first. Taking
    /// either would let `tar -tvf` show one name while amk writes another (a name a reviewer
    /// never saw), so two different names are refused; no writer gives a member two.
    /// Kinds no writer gives content, whose size readers do not agree on: a GNU volume label
    /// (`V`) too, whose text only bsdtar reads on past.
    static func holdsNoContent(_ kind: TarEntryKind) -> Bool {
        switch kind {
        case .hardLink, .symbolicLink, .characterDevice, .blockDevice, .fifo: true
        case .other(let flag): flag == UInt8(ascii: "V")
        default: false
        }
    }

    private static func kindWords(_ kind: TarEntryKind) -> String {
        switch kind {
        case .hardLink: "hard link"
        case .symbolicLink: "symbolic link"
        case .characterDevice: "character device"
        case .blockDevice: "block device"
        case .fifo: "FIFO"
        default: "volume label"
        }
    }

    static func name(pax: String?, gnu: String?, what: String, at offset: UInt64) throws(TarError) -> String? {
        guard let gnu else { return pax }
        guard let pax else { return gnu }
        guard UTF8Bytes.equal(pax, gnu) else {
            throw TarError(
                code: .badField,
                message: "the member's pax \(what) \"\(UstarBlock.escaped(pax, limit: 60))\" and its GNU long \(what) "
                    + "\"\(UstarBlock.escaped(gnu, limit: 60))\" differ: tar readers disagree on which names it",
                offset: offset)
        }
        return pax
    }

    private static func nulInName(at nul: Int, of count: Int) -> String {
        "the value holds a NUL byte at byte \(nul) of \(count); a name cannot contain NUL"
    }

    /// Decodes a header block; a first block that fails its checksum and lacks the ustar magic
    /// is reported as not a tar stream. Damage to a real archive's first header leaves its magic;
    /// without both, the data is something else (a text file, random bytes), and "damaged"
    /// would send the user looking for the wrong problem.
    private static func decodeBlock(_ block: UnsafeRawBufferPointer, at blockOffset: UInt64) throws(TarError) -> UstarBlock.Fields {
        do throws(TarError) {
            return try UstarBlock.decode(block, offset: blockOffset)
        } catch {
            guard blockOffset == 0, error.code == .badChecksum, !hasUstarMagic(block) else { throw error }
            throw TarError(
                code: .notATarStream,
                message: "not a tar stream: the first header block at offset 0 has no valid checksum and no ustar magic",
                offset: 0
            )
        }
    }

    /// Whether a (possibly partial) header block carries the POSIX or GNU magic "ustar".
    private static func hasUstarMagic(_ block: some RandomAccessCollection<UInt8>) -> Bool {
        let magic = Array("ustar".utf8)
        guard block.count >= UstarBlock.magic.lowerBound + magic.count else { return false }
        let start = block.index(block.startIndex, offsetBy: UstarBlock.magic.lowerBound)
        return block[start...].prefix(magic.count).elementsEqual(magic)
    }
}

extension TarHeader.Overrides {
    /// These values, falling back to `defaults` (the global header's) where unset.
    /// `cleared` names keywords whose defaults must not be used.
    fileprivate func merged(over defaults: TarHeader.Overrides, except cleared: Set<String>) -> TarHeader.Overrides {
        if cleared.isEmpty {
            return TarHeader.Overrides(
                path: path ?? defaults.path,
                linkPath: linkPath ?? defaults.linkPath,
                size: size ?? defaults.size,
                mtime: mtime ?? defaults.mtime,
                uid: uid ?? defaults.uid,
                gid: gid ?? defaults.gid,
                userName: userName ?? defaults.userName,
                groupName: groupName ?? defaults.groupName
            )
        }
        func fallback<Value>(_ key: String, _ value: Value?) -> Value? {
            cleared.contains(key) ? nil : value
        }
        return TarHeader.Overrides(
            path: path ?? fallback("path", defaults.path),
            linkPath: linkPath ?? fallback("linkpath", defaults.linkPath),
            size: size ?? fallback("size", defaults.size),
            mtime: mtime ?? fallback("mtime", defaults.mtime),
            uid: uid ?? fallback("uid", defaults.uid),
            gid: gid ?? fallback("gid", defaults.gid),
            userName: userName ?? fallback("uname", defaults.userName),
            groupName: groupName ?? fallback("gname", defaults.groupName)
        )
    }
}

// MARK: - Sparse members

extension TarParser {
    /// A sparse member's ustar block has been read: `header` was built from it (its size is still
    /// the stored one, and its name and size passed the checks of every member). Gathers the map its form gives, then reads the rest of the map (old GNU
    /// extension blocks, or pax 1.0's map in the content) or begins the content.
    private mutating func beginSparseHeader(
        _ header: inout TarHeader, block: UnsafeRawBufferPointer, oldGNU: Bool, pax: PaxSparse, headerOffset: UInt64,
        dataStart: UInt64, padding: Int, hasPax: Bool, handler: (Event) throws -> Void
    ) throws {
        func bad(_ what: String) -> TarError {
            TarError(code: .badField, message: "sparse member \"\(UstarBlock.escaped(header.path))\": \(what)", offset: headerOffset)
        }
        guard !(oldGNU && pax.seen) else { throw bad("both an old GNU sparse header and GNU.sparse pax records") }
        let storedSize = header.size
        var map = SparseMap()
        var extended = false
        var mapInContent = false
        if oldGNU {
            guard let realSize = UstarBlock.parseUnsigned(block, 483..<495) else {
                throw bad("its real size is not a number (\(UstarBlock.quoted(block, 483..<495)))")
            }
            map.realSize = realSize
            extended = try map.appendOldGNU(block, start: 386, count: 4, extendedFlag: 482, limit: limits.maxSparseRuns, at: headerOffset)
        } else {
            if pax.major != nil || pax.minor != nil {
                guard pax.major == 1, pax.minor == 0 else {
                    throw TarError(
                        code: .unsupported,
                        message: "unsupported: sparse format \(pax.major.map(String.init) ?? "?").\(pax.minor.map(String.init) ?? "?")"
                            + " of member \"\(UstarBlock.escaped(header.path))\"",
                        offset: headerOffset)
                }
                guard !pax.hasRecordMap else { throw bad("a map in its pax records, and version 1.0, which keeps the map in the content") }
                mapInContent = true
            } else {
                guard pax.hasRecordMap else { throw bad("no map (GNU.sparse.map, or GNU.sparse.offset and GNU.sparse.numbytes)") }
                guard pax.pendingOffset == nil else { throw bad("a GNU.sparse.offset without its GNU.sparse.numbytes") }
                if let count = pax.runCount, count != UInt64(pax.map.runs.count) {
                    throw bad("GNU.sparse.numblocks says \(count) runs, the map lists \(pax.map.runs.count)")
                }
                map = pax.map
            }
            guard let realSize = pax.realSize else { throw bad("no real size (GNU.sparse.realsize or GNU.sparse.size)") }
            map.realSize = realSize
        }
        guard header.kind == .regular, !UTF8Bytes.endsWithSlash(header.path) else {
            throw bad("a sparse map on a member that is not a regular file")
        }
        header.size = map.realSize
        let member = TarMember(header: header, headerOffset: headerOffset, dataOffset: dataStart, hasPaxHeader: hasPax, isSparse: true)
        let start = SparseStart(member: member, map: map, storedSize: storedSize, padding: padding)
        if extended {
            sparseStart = start
            state = .sparseExtension
        } else if mapInContent {
            guard storedSize > 0 else { throw bad("version 1.0 keeps its map in the content, and the member stores none") }
            sparseStart = start
            sparseText = SparseMapText()
            state = .sparseMap(remaining: storedSize, padding: padding)
        } else {
            try beginSparse(member, map: map, storedData: storedSize, padding: padding, handler: handler)
        }
    }

    /// One old GNU sparse extension block: 21 more runs, and whether another block follows.
    private mutating func sparseExtensionBlock(_ block: UnsafeRawBufferPointer, at blockOffset: UInt64, handler: (Event) throws -> Void)
        throws
    {
        // Taken out, so that adding runs does not copy the map held in `self`.
        var start = sparseStart!
        sparseStart = nil
        let more = try start.map.appendOldGNU(
            block, start: 0, count: 21, extendedFlag: 504, limit: limits.maxSparseRuns, at: start.member.headerOffset)
        if more {
            sparseStart = start
            return
        }
        start.member.dataOffset = blockOffset + UInt64(UstarBlock.size)
        try beginSparse(start.member, map: start.map, storedData: start.storedSize, padding: start.padding, handler: handler)
    }

    /// Announces a sparse member whose map is whole, once the map is held to the `storedData`
    /// bytes that follow, and starts its content.
    private mutating func beginSparse(
        _ member: TarMember, map: SparseMap, storedData: UInt64, padding: Int, handler: (Event) throws -> Void
    ) throws {
        let map = try map.validated(storedBytes: storedData, at: member.headerOffset)
        sparse = SparseCursor(map: map)
        currentMember = (member.headerOffset, member.header.path, storedData)
        if storedData == 0 {
            state = padding == 0 ? .header : .padding(padding)
            if padding == 0 { currentMember = nil }
            try handler(.member(member))
            try endSparse(handler: handler)
            try handler(.memberEnd)
        } else {
            state = .content(remaining: storedData, padding: padding)
            try handler(.member(member))
        }
    }

    /// Starts runs until one has stored bytes left, handing on the hole before each; returns the
    /// bytes left in that run.
    private mutating func startRun(handler: (Event) throws -> Void) throws -> UInt64 {
        while sparse!.left == 0 {
            guard sparse!.next < sparse!.map.runs.count else {
                // validated(storedBytes:at:) makes the runs hold every stored byte.
                throw TarError(code: .badField, message: "sparse map: stored bytes past its last run", offset: currentMember?.offset)
            }
            let run = sparse!.map.runs[sparse!.next]
            sparse!.next += 1
            sparse!.left = run.size
            if run.offset > sparse!.position {
                let gap = run.offset - sparse!.position
                sparse!.position = run.offset
                try handler(.hole(length: gap))
            }
        }
        return sparse!.left
    }

    /// The stored bytes are all in: the hole up to the file's size, if it ends in one.
    private mutating func endSparse(handler: (Event) throws -> Void) throws {
        guard let cursor = sparse else { return }
        sparse = nil
        if cursor.map.realSize > cursor.position { try handler(.hole(length: cursor.map.realSize - cursor.position)) }
    }

    /// Applies one `GNU.sparse.*` record of a member's pax header.
    private func applySparse(
        key: String, value bytes: UnsafeRawBufferPointer, to sparse: inout PaxSparse, headerOffset: UInt64
    ) throws(TarError) {
        let value = RawName.decode(bytes)
        func bad(_ what: String) -> TarError { Self.recordError(key: key, value: value, what, at: headerOffset) }
        func number() throws(TarError) -> UInt64 {
            guard let number = PaxRecords.parseDecimal(value) else { throw bad("not a decimal number") }
            return number
        }
        sparse.seen = true
        switch key {
        case "GNU.sparse.size", "GNU.sparse.realsize":
            sparse.realSize = try number()
        case "GNU.sparse.numblocks":
            sparse.runCount = try number()
        case "GNU.sparse.offset":
            guard sparse.pendingOffset == nil else { throw bad("follows another GNU.sparse.offset without a GNU.sparse.numbytes") }
            sparse.pendingOffset = try number()
            sparse.hasRecordMap = true
        case "GNU.sparse.numbytes":
            guard let start = sparse.pendingOffset else { throw bad("has no GNU.sparse.offset before it") }
            try sparse.map.append(SparseMap.Run(offset: start, size: try number()), limit: limits.maxSparseRuns, at: headerOffset)
            sparse.pendingOffset = nil
        case "GNU.sparse.map":
            guard !sparse.hasListMap else { throw bad("a second map for the same member") }
            try sparse.map.appendList(value, limit: limits.maxSparseRuns, at: headerOffset)
            sparse.hasRecordMap = true
            sparse.hasListMap = true
        case "GNU.sparse.name":
            if let nul = bytes.firstIndex(of: 0) { throw bad(Self.nulInName(at: nul, of: bytes.count)) }
            guard !value.isEmpty else { throw bad("an empty name") }
            guard bytes.count <= limits.maxPathLength else {
                throw TarError(
                    code: .tooLarge, message: "pax \(key) of \(bytes.count) bytes exceeds the limit of \(limits.maxPathLength)",
                    offset: headerOffset)
            }
            sparse.name = value
        case "GNU.sparse.major":
            sparse.major = try number()
        case "GNU.sparse.minor":
            sparse.minor = try number()
        default:
            throw TarError(
                code: .unsupported, message: "unsupported: pax keyword \"\(UstarBlock.escaped(key))\" of a sparse member",
                offset: headerOffset)
        }
    }
}
