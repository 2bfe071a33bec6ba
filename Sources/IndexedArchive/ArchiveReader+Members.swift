import Tar
import XZ

// Reading single members: by random access through the index, or by scanning an archive without one.
extension ArchiveReader {
    /// Writes the content of member `name` to `output` in slices, decoding only the blocks it spans
    /// (indexed) or scanning to it (sequential). In an indexed archive the tar header at the
    /// indexed offset must agree with the index, and the content checksum is verified; of several
    /// members with the name, the last one is read. A hard link gives its target's content.
    public func read(member name: String, into output: (UnsafeRawBufferPointer) throws -> Void) async throws {
        try await read(member: name, maxSequentialBytes: 1 << 30, into: output)
    }

    private func read(member name: String, maxSequentialBytes: Int, into output: (UnsafeRawBufferPointer) throws -> Void) async throws {
        guard let index, let blocks else {
            // Without an index the member is found by decoding up to it; its bytes are kept in
            // memory (bounded) because the scan runs on another thread than `output`.
            let wanted = UTF8Bytes.droppingTrailingSlash(name)
            let found = try await scanSequentially(
                name: "amk-scan", making: { TarConsumer(capture: MemberCapture(wanted, limit: maxSequentialBytes)) },
                until: { $0.capture?.isDone == true }
            ) { consumer in
                consumer.capture?.isDone == true ? consumer.capture?.bytes : nil
            }
            guard let bytes = found else {
                throw ArchiveError(.memberNotFound, "no such member", path: path, member: name)
            }
            try bytes.withUnsafeBytes { try output($0) }
            return
        }
        let wanted = UTF8Bytes.droppingTrailingSlash(name)
        guard let found = index.entries.last(where: { UTF8Bytes.equal($0.name, wanted) }) else {
            if selection != nil {
                // Not among the members this reader was opened for: it may be among the others.
                try await whole().read(member: name, maxSequentialBytes: maxSequentialBytes, into: output)
                return
            }
            throw ArchiveError(.memberNotFound, "no such member", path: path, member: name)
        }
        var entry = found
        if entry.kind == .hardLink, let target = entry.linkTarget {
            // A target spelt as a folder names no file, as a full extraction finds.
            if UTF8Bytes.endsWithSlash(target) {
                throw ArchiveError(
                    .unsafePath, "hard link to '\(target)': it names a folder, which no hard link can be made to", path: path,
                    member: found.path)
            }
            // A hard link's content is its target's: the latest member of that name before it.
            let name = ArchiveEntry.name(of: target)
            if let resolved = index.entries.last(where: { UTF8Bytes.equal($0.name, name) && $0.headerOffset < found.headerOffset }) {
                entry = resolved
            } else if selection != nil {
                try await whole().read(member: name, maxSequentialBytes: maxSequentialBytes, into: output)
                return
            }
        }
        // Nothing to deliver: an empty file, a directory or a symbolic link has no content to read.
        guard entry.kind == .regular, entry.size > 0 else { return }
        try await readMember(entry, blocks: blocks, parallelism: PackOptions.activeCores, onHeader: { _ in }) { piece in
            try piece.withBytes { try output($0) }
        }
    }

    /// Reads an indexed member by random access: decodes the blocks holding its header blocks and
    /// content (`headerOffset ..< dataOffset + size`) and follows it with a ``MemberCursor``,
    /// which refuses the member unless the tar header at the indexed offset agrees with the index.
    /// `onHeader` then receives the header, and `deliver` the content in order. The content
    /// checksum is verified after the last piece: when this returns, every byte delivered was
    /// right; when it throws, the caller must discard what it received.
    func readMember(
        _ entry: ArchiveEntry, blocks: BlockScheduler, parallelism: Int,
        onHeader: (TarHeader) async throws -> Void,
        deliver: (DecodedPiece) async throws -> Void
    ) async throws {
        let span = try span(of: entry, fileIndex: blocks.fileIndex)
        var cursor = MemberCursor(entry, end: span.end, path: path)
        try await blocks.decode(span.blocks, from: entry.headerOffset, to: span.end, parallelism: parallelism) { piece in
            let step = try cursor.take(piece)
            if let header = step.header { try await onHeader(header) }
            if let content = step.content { try await deliver(content) }
        }
        try cursor.finish()
    }

    /// Where a member lies: the data blocks holding its header blocks and content, and the tar
    /// offset just past its content; refused when the index places it outside the data blocks.
    func span(of entry: ArchiveEntry, fileIndex: XZFileIndex) throws(ArchiveError) -> (blocks: ClosedRange<Int>, end: UInt64) {
        let start = entry.headerOffset
        let (end, overflow) = entry.dataOffset.addingReportingOverflow(entry.size)
        guard !overflow, entry.dataOffset > start, let first = fileIndex.locate(uncompressedOffset: start),
            let last = fileIndex.locate(uncompressedOffset: end - 1), last < dataBlockCount, first <= last
        else {
            throw ArchiveError(.corrupt, "member lies outside the data blocks", path: path, member: entry.path, offset: start)
        }
        return (first...last, end)
    }

    /// The content of member `name`, refusing members larger than `maxBytes`.
    public func contents(of name: String, maxBytes: Int = 1 << 30) async throws -> [UInt8] {
        if let entry = try await entry(named: name), entry.size > UInt64(clamping: maxBytes) {
            throw ArchiveError(.limitExceeded, "member is \(entry.size) bytes, over the limit of \(maxBytes)", path: path, member: name)
        }
        var out: [UInt8] = []
        try await read(member: name, maxSequentialBytes: maxBytes) { slice in
            guard slice.count <= maxBytes - out.count else {
                throw ArchiveError(.limitExceeded, "member is over the limit of \(maxBytes) bytes", member: name)
            }
            out.append(contentsOf: slice)
        }
        return out
    }
}
