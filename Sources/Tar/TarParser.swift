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
/// GNU base-256 numbers and pre-POSIX v7 headers. Sparse files are refused as `.unsupported`.
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

        /// Creates limits; the defaults are far above anything a real archive needs.
        public init(maxPaxHeaderSize: Int = 1 << 20, maxPathLength: Int = 64 * 1024) {
            self.maxPaxHeaderSize = maxPaxHeaderSize
            self.maxPathLength = maxPathLength
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
        /// Passing content through.
        case content(remaining: UInt64, padding: Int)
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
                let take = Int(min(remaining, UInt64(available)))
                let start = consumed
                let left = remaining - UInt64(take)
                state = left == 0 ? .padding(padding) : .content(remaining: left, padding: padding)
                index += take
                consumed += UInt64(take)
                try handler(.data(UnsafeRawBufferPointer(rebasing: bytes[(index - take)..<index]), offset: start))
                if left == 0 {
                    if padding == 0 {
                        state = .header
                        currentMember = nil
                    }
                    try handler(.memberEnd)
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

            case .header, .zeroBlock:
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
        // A lone zero block followed by a header: GNU tar warns and reads on; so do we.
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

        switch fields.typeflag {
        case UInt8(ascii: "x"), UInt8(ascii: "X"):
            if pending.firstOffset == nil { pending.firstOffset = blockOffset }
            pending.hasPax = true
            try startExtended(.pax, limit: limits.maxPaxHeaderSize, what: "pax extended header")
            if fields.size == 0 { try finishExtended(.pax, blockOffset: blockOffset, handler: handler) }
        case UInt8(ascii: "g"):
            try startExtended(.global, limit: limits.maxPaxHeaderSize, what: "pax global header")
            if fields.size == 0 { try finishExtended(.global, blockOffset: blockOffset, handler: handler) }
        case UInt8(ascii: "L"), UInt8(ascii: "K"):
            if pending.firstOffset == nil { pending.firstOffset = blockOffset }
            let kind: ExtendedKind = fields.typeflag == UInt8(ascii: "L") ? .longName : .longLink
            // The GNU long-name data includes a terminating NUL.
            let limit = limits.maxPathLength < Int.max ? limits.maxPathLength + 1 : limits.maxPathLength
            try startExtended(kind, limit: limit, what: "GNU long name")
            if fields.size == 0 { try finishExtended(kind, blockOffset: blockOffset, handler: handler) }
        case UInt8(ascii: "S"):
            throw TarError(
                code: .unsupported, message: "unsupported: sparse member \"\(UstarBlock.escaped(fields.path))\" (GNU typeflag 'S')",
                offset: blockOffset)
        default:
            var merged = pending.overrides.merged(over: globals, except: pending.cleared)
            merged.extendedAttributes = pending.overrides.extendedAttributes
            let header = TarHeader(fields: fields, overrides: merged)
            let headerOffset = pending.firstOffset ?? blockOffset
            let hasPax = pending.hasPax
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
            let name = RawName.decode(data[..<end])
            if kind == .longName {
                pending.overrides.path = name
            } else {
                pending.overrides.linkPath = name
            }
        case .pax:
            var overrides = pending.overrides
            var cleared = pending.cleared
            try data.withUnsafeBytes { buffer in
                try PaxRecords.parse(buffer, headerOffset: blockOffset) { key, value throws(TarError) in
                    if value.isEmpty { cleared.insert(key) }
                    _ = try apply(key: key, value: value, to: &overrides, global: false, headerOffset: blockOffset)
                }
            }
            pending.overrides = overrides
            pending.cleared = cleared
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
    /// reported but not applied: no writer uses them that way and applying them would give every
    /// member the same name.
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
        func bad(_ what: String) -> TarError {
            TarError(
                code: .badPaxRecord,
                message: "pax keyword \"\(UstarBlock.escaped(key))\": \(what) (\"\(UstarBlock.escaped(value, limit: 40))\")",
                offset: headerOffset)
        }
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
            if let nul = bytes.firstIndex(of: 0) {
                throw bad("the value holds a NUL byte at byte \(nul) of \(bytes.count); a name cannot contain NUL")
            }
        default:
            break
        }
        switch key {
        case "path" where !global:
            overrides.path = try checkedPath()
        case "linkpath" where !global:
            overrides.linkPath = try checkedPath()
        case "size" where !global: overrides.size = try number()
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
        case _ where !global && key.hasPrefix(PaxRecords.xattrPrefix) && key.utf8.count > PaxRecords.xattrPrefix.utf8.count:
            overrides.extendedAttributes[String(key.dropFirst(PaxRecords.xattrPrefix.count))] = Array(bytes)
        default:
            if key.hasPrefix("GNU.sparse.") {
                throw TarError(
                    code: .unsupported, message: "unsupported: sparse member (pax keyword \"\(UstarBlock.escaped(key))\")",
                    offset: headerOffset)
            }
        }
        return value
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
