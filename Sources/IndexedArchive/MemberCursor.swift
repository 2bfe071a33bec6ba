import Tar
import XZ

/// Follows one indexed member through decoded tar bytes that arrive in order, in pieces that may
/// start before it and end after it (a block decoded once for several members is handed to the
/// cursor of each in turn).
///
/// The index alone is never trusted for what to write: the tar header(s) found at the indexed
/// offset (a pax `x` or GNU `L`/`K` header and the ustar block) must agree with the index entry
/// (path, kind, size, mode, link target, offsets) before the header is handed on, and the content
/// checksum is verified by ``finish()``, once the last byte has passed. An index that disagreed
/// with the tar headers could otherwise make a reader write another member's bytes, or a link or
/// a set-id file that no tar header describes, while `verify` (which reads the headers) rejects it.
/// The header's mtime is taken from the index, which has the nanoseconds (`verify` checks that
/// both agree).
struct MemberCursor: Sendable {
    let entry: ArchiveEntry
    /// The archive's path, for errors.
    let path: String
    /// Tar offset just past the member's content.
    let end: UInt64
    private var parser = TarParser()
    private var found: TarMember?
    /// The checked header, once its bytes have passed.
    private(set) var header: TarHeader?
    private var checksum: UInt64 = 0

    /// What one piece held for the member.
    struct Step {
        /// The member's header, checked against the index, when this piece completed it.
        var header: TarHeader?
        /// The member's content in this piece, if any.
        var content: DecodedPiece?
    }

    /// A cursor for `entry`; `end` is where its content ends (the caller has checked that
    /// `dataOffset + size` does not overflow).
    init(_ entry: ArchiveEntry, end: UInt64, path: String) {
        self.entry = entry
        self.end = end
        self.path = path
    }

    /// Takes the member's part of `piece`: header bytes go to the parser (the header is checked
    /// once they are all in), content bytes into the checksum and back to the caller, as a view
    /// of the same buffer, without a copy.
    mutating func take(_ piece: DecodedPiece) throws(ArchiveError) -> Step {
        var step = Step()
        let pieceEnd = piece.offset + UInt64(piece.count)
        var lower = max(piece.offset, entry.headerOffset)
        let upper = min(pieceEnd, end)
        guard lower < upper else { return step }
        if header == nil {
            let headerEnd = min(upper, entry.dataOffset)
            if lower < headerEnd {
                let slice = piece.slice(lower..<headerEnd)
                var found = self.found
                do {
                    try slice.withBytes { raw in
                        try parser.consume(raw) { event in
                            if case .member(let member) = event, found == nil { found = member }
                        }
                    }
                } catch let error as TarError {
                    throw ArchiveError(
                        .corrupt, "no valid tar header at the indexed offset: \(error.message)", path: path,
                        member: entry.path, offset: entry.headerOffset &+ (error.offset ?? 0), underlying: error)
                } catch {
                    // The parser throws only TarError; the closure above throws nothing.
                    throw ArchiveError(
                        .corrupt, "no valid tar header at the indexed offset: \(error)", path: path,
                        member: entry.path, offset: entry.headerOffset)
                }
                self.found = found
                lower = headerEnd
            }
            guard lower == entry.dataOffset else { return step }
            let checked = try check(found)
            header = checked
            step.header = checked
        }
        guard lower < upper else { return step }
        let content = piece.slice(lower..<upper)
        content.withBytes { checksum = CRC.crc64($0, previous: checksum) }
        step.content = content
        return step
    }

    /// Called once the member's last byte has passed: refuses a member whose header never came,
    /// or whose content checksum does not match the index. Until this returns, nothing received
    /// may be kept.
    func finish() throws(ArchiveError) {
        guard header != nil else {
            throw ArchiveError(
                .corrupt, "the member's header blocks were not decoded", path: path, member: entry.path,
                offset: entry.headerOffset)
        }
        if entry.kind == .regular, let expected = entry.checksum, expected != checksum {
            throw ArchiveError(
                .checksumMismatch, "content checksum mismatch", path: path, member: entry.path,
                offset: entry.dataOffset)
        }
    }

    /// The header found at the entry's offset, if it is the entry's; else why not.
    private func check(_ member: TarMember?) throws(ArchiveError) -> TarHeader {
        func disagree(_ what: String) -> ArchiveError {
            ArchiveError(
                .corrupt, "the tar header at the indexed offset disagrees with the index: \(what)",
                path: path, member: entry.path, offset: entry.headerOffset)
        }
        guard let member else {
            throw disagree("no member header ends at the indexed data offset \(entry.dataOffset)")
        }
        let stored = member.header
        guard !member.isSparse else { throw disagree("the header is of a sparse member, which an amk index never holds") }
        guard member.headerOffset == 0 else {
            throw disagree("the member's headers start \(member.headerOffset) bytes after the indexed offset")
        }
        guard entry.headerOffset &+ member.dataOffset == entry.dataOffset else {
            throw disagree("its data starts at \(entry.headerOffset &+ member.dataOffset), the index says \(entry.dataOffset)")
        }
        if let what = entry.disagreement(with: stored) { throw disagree(what) }
        var header = stored
        header.mtime = entry.mtime
        return header
    }
}
