import Foundation
import Tar
import XZ

/// Recovers what can be trusted from a damaged archive.
///
/// It walks the xz blocks forward from the start, using the sizes each Block Header carries,
/// decodes each one and verifies its check, and stops at the first block that fails. The members
/// that lie wholly in verified blocks are extracted (safely, as ``ArchiveReader`` does); one cut by
/// the damage is removed. The xz Index at the end is not needed, so a truncated archive salvages
/// too; when the walk reaches it whole, it is still checked (CRC32 and records against the blocks
/// walked), so that "no damage" means what `verify` means.
public enum ArchiveSalvager {
    /// Extracts into `directory` every member that lies wholly in the verified blocks of the archive
    /// at `path`.
    ///
    /// - Returns: what was recovered and where the damage begins.
    /// - Throws: `ArchiveError` when the file cannot be opened or the destination cannot be made
    ///   ready, `CancellationError` when cancelled. Damage is not an error: the report describes it.
    public static func salvage(path: String, to directory: String, options: ExtractOptions = ExtractOptions()) async throws -> SalvageReport
    {
        let file = try ArchiveFile(path: path)
        // The index only sharpens the report (which members were lost): an archive whose index
        // cannot be read is salvaged without it, but a cancellation still ends the salvage.
        let indexEntries: [ArchiveEntry]?
        // Why the archive could not be opened, when that is damage: if the walk then finds none
        // in the blocks, it is in the index (or the xz Index), and the archive is not whole.
        var openingDamage: ArchiveError?
        do {
            indexEntries = try await ArchiveReader.open(path: path).index?.entries
        } catch let error as CancellationError {
            throw error
            // cancellation: the clause above rethrows CancellationError; an unreadable index is salvaged without
        } catch {
            indexEntries = nil
            if let error = error as? ArchiveError, [.corrupt, .checksumMismatch, .unsupportedVersion].contains(error.code) {
                openingDamage = error
            }
        }
        let damageAtOpening = openingDamage
        let io = WorkerThreadPool(threads: 1, name: "amk-salvage")
        defer { io.shutdown() }
        // Where each member's headers start, for resuming after a damaged block.
        let memberStarts = indexEntries.map { $0.map(\.headerOffset).sorted() }
        let filter = options.memberFilter
        // The consumer, its extractor and the files they write stay in this one job.
        let (walk, recovered, recoveredSet, unfinished, unmade) = try await io.run {
            flag -> (Walk, [String], Set<ExactName>, String?, [String]) in
            let extractor = try Extractor(destination: directory, options: options, archiveSize: file.size)
            extractor.skipsLinksToMissingTargets = true
            // Held to the index as `extract` holds them, until damage is met (the walk goes on
            // without it then): a member the index does not list, or lists otherwise, is damage,
            // not a member to write ("no damage found" once came with a member `list` hid).
            var consumer = TarConsumer(
                conformance: indexEntries.map(IndexConformance.init), listing: MemberListing(),
                extraction: ExtractionSink(extractor, filter: filter))
            var walk: Walk
            do {
                walk = try walkBlocks(file: file, consumer: &consumer, flag: flag, memberStarts: memberStarts, filter: filter)
            } catch {
                consumer.extractor?.abandonCurrent()
                throw error
            }
            let unfinished = consumer.unfinishedMember
            if walk.damage == nil, walk.stop == nil {
                // Every xz block verified, but the tar stream they hold may still stop short: inside
                // a member (cut before it was compressed, or a size field claims more than there
                // is: the member is lost), or between two (what followed is unknown, as `verify`
                // says). Either way the archive is not whole.
                if let unfinished {
                    walk.damageOffset = walk.blocksEnd
                    walk.damage = "the tar stream ends inside member '\(TerminalSafe.name(unfinished))', which is cut short"
                } else if consumer.endOffset == nil {
                    walk.damageOffset = walk.blocksEnd
                    walk.damage = "the tar stream ends without its end-of-archive marker"
                } else {
                    do throws(ArchiveError) {
                        try consumer.conformance?.finish()
                        // cancellation: ArchiveError only, reported as the damage it is
                    } catch {
                        walk.damageOffset = walk.blocksEnd
                        walk.damage = error.message
                    }
                }
            }
            if walk.damage == nil, walk.stop == nil, let damageAtOpening {
                // Every block and member sound, but the archive could not be opened: its index
                // is damaged ("no damage found" and status 0 came with an index `verify` refused,
                // and `list` showed names the salvage did not write).
                walk.damageOffset = damageAtOpening.offset ?? walk.blocksEnd
                walk.damageIsInTheIndexAlone = true
                walk.damage =
                    "the archive's index cannot be used (\(damageAtOpening.message)); the members were recovered from the tar "
                    + "headers alone"
            }
            consumer.extractor?.abandonCurrent()
            try? consumer.extractor?.finish()
            let skipped = Set((consumer.extractor?.missingLinkMembers ?? []).map(ExactName.init))
            // Hard links whose target the damage took (or that the archive never held before
            // them) were seen but not made: they are lost, damage or not.
            let all = (consumer.collected ?? []).map(\.path)
            var whole = all.filter { !skipped.contains(ExactName($0)) }
            if let unfinished, let last = whole.last, UTF8Bytes.equal(last, unfinished) { whole.removeLast() }
            // With a selection, only the selected members were written, and only they are reported.
            let recovered = whole.filter { TarConsumer.selected($0, by: filter) }
            let recoveredSet = Set(recovered.map(ExactName.init))
            let unmade = all.filter { skipped.contains(ExactName($0)) && TarConsumer.selected($0, by: filter) }
            // The tar headers have whole seconds; the index, when readable, has the nanoseconds.
            if let indexEntries {
                consumer.extractor?.restoreTimes(from: indexEntries.filter { recoveredSet.contains(ExactName($0.path)) })
            }
            return (walk, recovered, recoveredSet, unfinished, unmade)
        }
        let selected = { (path: String) in TarConsumer.selected(path, by: filter) }
        // Damage in the index alone stopped nothing: the tar stream was read to its end.
        let stoppedShort = (walk.damage != nil && !walk.damageIsInTheIndexAlone) || walk.stop != nil
        var lost: [String]
        if let indexEntries, stoppedShort {
            // What the index names past the damage was never seen; it is lost too.
            lost = indexEntries.map(\.path).filter { selected($0) && !recoveredSet.contains(ExactName($0)) }
        } else {
            lost = unmade
            if let unfinished, selected(unfinished) { lost.append(unfinished) }
        }
        return SalvageReport(
            recovered: recovered, lost: lost, lostIsComplete: indexEntries != nil || !stoppedShort,
            goodBlocks: walk.goodBlocks, damagedBlocks: walk.damagedBlocks,
            damageOffset: walk.damageOffset, damage: walk.damage, stop: walk.stop, isUnchecked: walk.unchecked)
    }

    struct Walk: Sendable {
        var goodBlocks = 0
        var damagedBlocks = 0
        var damageOffset: UInt64?
        var damage: String?
        var stop: String?
        /// The damage is the index's, every block and member being sound.
        var damageIsInTheIndexAlone = false
        /// The file offset just past the last block walked (where the xz Index begins).
        var blocksEnd: UInt64 = 0
        /// A block walked carries no integrity check (its stream's check type is None).
        var unchecked = false
    }

    /// Blocks that decode to at most this many bytes are held whole while their check is
    /// verified; larger ones are decoded twice instead, so that memory stays bounded whatever the
    /// Block Headers declare.
    static let maxBufferedBlockSize = UInt64(ArchiveReader.defaultMaxBufferedBlockSize)

    /// Walks the blocks and feeds the verified ones to `consumer`.
    ///
    /// After a damaged block whose header still gives both its sizes, the walk resynchronises on
    /// the next block header (the damaged block's declared end) when the index gave the members'
    /// offsets (`memberStarts`): the member the damage cut is dropped, and parsing resumes with a
    /// fresh parser at the first member that starts after the damaged block, so members of later
    /// intact blocks are recovered. Without those offsets there is no safe place to resume and
    /// the walk stops at the damage.
    static func walkBlocks(
        file: ArchiveFile, consumer: inout TarConsumer, flag: CancellationFlag,
        memberStarts: [UInt64]? = nil, filter: MemberFilter? = nil
    ) throws -> Walk {
        var walk = Walk()
        var check: XZCheck
        do {
            let header = try file.read(at: 0, count: StreamHeader.size)
            check = try header.withUnsafeBytes { try StreamHeader.decode($0) }
        } catch let error as XZError {
            walk.damageOffset = 0
            // A header that names a check no reader can verify is whole, and says so.
            walk.damage = error.code == .unsupportedCheck ? error.message : "no valid xz stream header"
            return walk
        } catch let error as ArchiveError where error.code == .corrupt {
            // Shorter than a stream header: damage too. An I/O error (or a cancellation) is not.
            walk.damageOffset = 0
            walk.damage = "no valid xz stream header"
            return walk
        }
        var offset = UInt64(StreamHeader.size)
        let decoder = BlockDecoder(memoryLimit: UInt64(ArchiveReader.Limits.decoderMemory(within: AddressSpace.available)))
        /// The tar offset where the current block's bytes start.
        var tarPosition: UInt64 = 0
        /// After damage: tar bytes before this offset are skipped (they belong to a lost member).
        var resumeAt: UInt64?
        /// Consumes `bytes`, which start at tar offset `at`, minus what lies before `resumeAt`.
        func consume(_ bytes: [UInt8], at: UInt64) throws {
            var start = 0
            if let resume = resumeAt {
                let end = at + UInt64(bytes.count)
                guard resume < end else { return }
                start = Int(resume - min(resume, at))
                resumeAt = nil
            }
            try bytes.withUnsafeBytes { raw in try consumer.consume(UnsafeRawBufferPointer(rebasing: raw[start...])) }
        }
        /// The header of the block being walked, while its sizes are known.
        var current: (declared: UInt64, uncompressed: UInt64)?
        /// Every verified block, for comparing with the xz Index once the walk reaches it.
        var walked: [WalkedBlock] = []
        while offset < file.size {
            if flag.isCancelled { throw CancellationError() }
            current = nil
            do {
                let head = try file.readAvailable(at: offset, count: 1024)
                guard let first = head.first else { break }
                if first == 0 {
                    // The xz Index: every block is behind us. The members are all recovered, but
                    // a file cut inside the Index (or its footer) is still damaged, and saying
                    // "no damage" would let a truncated copy pass for a whole one.
                    let lastIndex: UInt64
                    switch try endOfFile(file: file, indexOffset: offset) {
                    case .cut(let problem):
                        // The first damage is the one reported; what came after it is known to be lost.
                        if walk.damage == nil {
                            walk.damageOffset = file.size
                            walk.damage = problem
                        }
                        return walk
                    case .whole(let start):
                        lastIndex = start
                    }
                    walk.blocksEnd = offset
                    if lastIndex == offset {
                        // Once a block was damaged, the blocks walked are not the Index's (the
                        // damaged one is missing): comparing them would report damage that is not
                        // there, over the damage that is.
                        if walk.damage == nil, let problem = try indexProblem(file: file, walked: walked) {
                            walk.damageOffset = problem.offset
                            walk.damage = problem.why
                        }
                        return walk
                    }
                    // Another stream follows (`cat a.xz b.xz`, or xz's own concatenations): its
                    // blocks continue the same tar stream.
                    switch try nextStream(file: file, indexOffset: offset) {
                    case .stream(let next, let nextCheck):
                        offset = next
                        check = nextCheck
                        continue
                    case .damaged(let at, let problem):
                        // The last stream's footer is whole, but what lies between this stream
                        // and it is not a stream: its blocks cannot be found.
                        if walk.damage == nil {
                            walk.damageOffset = at
                            walk.damage = problem
                        }
                        return walk
                    }
                }
                let info = try head.withUnsafeBytes { try BlockHeaderInfo.parse($0, check: check, fileOffset: offset) }
                // A header without a compressed size (xz's single-threaded blocks) gives no end:
                // the block is decoded forward until it ends, bounded by the end of the file.
                let declared = info.totalSize(check: check)
                if let declared, declared > file.size - offset {
                    throw ArchiveError(.corrupt, "block of \(declared) bytes runs past the end of the file", offset: offset)
                }
                if let declared, let size = info.uncompressedSize { current = (declared, size) }
                if check == .none { walk.unchecked = true }
                var total = declared ?? (file.size - offset)
                let stream = BlockStream(
                    file: file, offset: offset, totalSize: total, uncompressedSize: info.uncompressedSize,
                    check: check, decoder: decoder, isOpenEnded: declared == nil)
                let isCancelled = { flag.isCancelled }
                if let size = info.uncompressedSize, size <= maxBufferedBlockSize {
                    // Only verified bytes reach the tar parser: the block is decoded whole, its
                    // check verified, before any of it is consumed.
                    var out: [UInt8] = []
                    out.reserveCapacity(Int(size))
                    try stream.decode(maxBytes: .max, isCancelled: isCancelled) { out.append(contentsOf: $0) }
                    try consume(out, at: tarPosition)
                    tarPosition += UInt64(out.count)
                } else {
                    // A block too large to hold (or of unknown size) is decoded twice: once to
                    // verify its check, then again into the parser, a slice at a time.
                    try stream.decode(maxBytes: .max, isCancelled: isCancelled) { _ in }
                    if declared == nil, let end = stream.endOffset { total = end - offset }
                    let again = BlockStream(
                        file: file, offset: offset, totalSize: total, uncompressedSize: stream.delivered,
                        check: check, decoder: decoder)
                    var piece: [UInt8] = []
                    while !again.isFinished {
                        piece.removeAll(keepingCapacity: true)
                        try again.decode(maxBytes: BlockScheduler.streamPiece, isCancelled: isCancelled) { piece.append(contentsOf: $0) }
                        try consume(piece, at: tarPosition)
                        tarPosition += UInt64(piece.count)
                    }
                }
                if declared == nil, let end = stream.endOffset { total = end - offset }
                walked.append(WalkedBlock(offset: offset, totalSize: total, uncompressedSize: stream.delivered))
                walk.goodBlocks += 1
                offset += total
            } catch let error as XZError {
                if walk.damage == nil {
                    walk.damageOffset = error.offset ?? offset
                    walk.damage = error.description
                }
                guard let skip = resynchronise(after: current) else { return walk }
                offset += skip
                continue
            } catch let error as ArchiveError {
                // An I/O error (the destination full or unwritable, or the archive unreadable)
                // says nothing about the archive's bytes: reporting it as damage would send the
                // user looking for a bad block that is not there. It stops the salvage, as such.
                if case .io = error.code { throw error }
                // A limit of the caller's is no damage either: the bytes were sound, and the
                // report must say which limit, not send the user looking for a bad block.
                // So is a member the extraction refuses (a path that would leave the destination):
                // the salvage stops there, as an extraction does, naming the member.
                if error.code == .limitExceeded || error.code == .unsafePath {
                    walk.stop = error.member.map { "member '\(TerminalSafe.name($0))': \(error.message)" } ?? error.message
                    return walk
                }
                if walk.damage == nil {
                    if let member = error.member {
                        // A member's offset is in the tar stream: the report's is in the file (the
                        // block's), and the member and its tar offset go in the words.
                        walk.damageOffset = offset
                        walk.damage =
                            "member '\(TerminalSafe.name(member))'" + (error.offset.map { ", tar offset \($0)" } ?? "") + ": "
                            + error.message
                    } else {
                        walk.damageOffset = error.offset ?? offset
                        walk.damage = error.message
                    }
                }
                // A member that disagrees with the index, in a block whose check held, shows the
                // index wrong: its offsets are then no place to resume. An index that shrank a
                // file resumed the walk at a header planted in that file's content, and salvage
                // wrote a set-user-ID member that no reader shows.
                guard error.code == .corrupt, !consumer.indexDisagreed, let skip = resynchronise(after: current) else { return walk }
                offset += skip
                continue
            } catch let error as TarError {
                walk.damageOffset = offset
                walk.damage = error.description
                return walk
            }
        }
        if walk.damage == nil {
            walk.damageOffset = file.size
            walk.damage = "the file ends before the xz Index"
        }
        return walk

        /// Prepares the walk to go on after the damaged block `block`: drops the member it cut,
        /// starts a fresh parser, and returns how far to skip in the file; nil when it cannot.
        func resynchronise(after block: (declared: UInt64, uncompressed: UInt64)?) -> UInt64? {
            guard let block, let memberStarts else { return nil }
            let end = tarPosition + block.uncompressed
            guard let next = memberStarts.first(where: { $0 >= end }) else { return nil }
            walk.damagedBlocks += 1
            tarPosition = end
            resumeAt = next
            let extractor = consumer.extractor
            extractor?.dropCurrentMember()
            var listing = consumer.listing
            // The member the damage cut was begun, not recovered.
            listing?.dropLast(ifNamed: consumer.unfinishedMember)
            consumer = TarConsumer(listing: listing, extraction: extractor.map { ExtractionSink($0, filter: filter) })
            return block.declared
        }
    }

    /// A block the walk decoded and verified: where it starts, its size in the file (padding
    /// included) and how many bytes it decoded to.
    struct WalkedBlock: Sendable {
        var offset: UInt64
        var totalSize: UInt64
        var uncompressedSize: UInt64
    }

    /// What is wrong with the file's xz Indexes, read as `verify` and every stock tool reads them,
    /// once the walk has verified every block and reached the last Index; nil when they are whole
    /// and list exactly the blocks walked.
    ///
    /// The walk needs no Index, but a file whose Index is damaged (a flipped bit in a record or
    /// its CRC32) is not whole: `xz -d`, `pixz` and `amk verify` refuse it, so "no damage found"
    /// would be untrue even though every member was recovered.
    static func indexProblem(file: ArchiveFile, walked: [WalkedBlock]) throws -> (offset: UInt64, why: String)? {
        let index: XZFileIndex
        do {
            index = try XZFileIndex.read(fileSize: file.size) { offset, count in try file.read(at: offset, count: count) }
        } catch let error as XZError {
            return (error.offset ?? file.size, "the xz Index is damaged: \(error.message)")
        } catch let error as ArchiveError where error.code == .corrupt {
            return (error.offset ?? file.size, "the xz Index is damaged: \(error.message)")
        }
        let records = index.blocks
        for (number, block) in walked.enumerated() {
            guard number < records.count else {
                return (block.offset, "the xz Index lists \(records.count) blocks, but the file holds \(walked.count)")
            }
            let record = records[number]
            guard record.compressedOffset == block.offset, record.totalSize == block.totalSize,
                record.uncompressedSize == block.uncompressedSize
            else {
                return (
                    block.offset,
                    "the xz Index's record of block \(number + 1) (\(record.totalSize) bytes at offset \(record.compressedOffset), "
                        + "decoding to \(record.uncompressedSize)) does not match the block at offset \(block.offset) "
                        + "(\(block.totalSize) bytes, decoding to \(block.uncompressedSize))"
                )
            }
        }
        if records.count > walked.count {
            return (
                records[walked.count].compressedOffset, "the xz Index lists \(records.count) blocks, but the file holds \(walked.count)"
            )
        }
        return nil
    }

    /// What follows the xz stream whose Index starts at `indexOffset`, when it is not the last.
    enum NextStream {
        /// Another stream's blocks start at `offset`, with its check type.
        case stream(offset: UInt64, check: XZCheck)
        /// Something follows that is not a stream, from `offset`, for the reason given.
        case damaged(offset: UInt64, String)
    }

    /// The stream that follows the one whose xz Index starts at `indexOffset`, which
    /// ``endOfFile(file:indexOffset:)`` found is not the file's last.
    ///
    /// This stream's Index is walked forward (its records are variable-length integers) only to learn
    /// its size, a piece of the file at a time; the footer after it must give the same size, and
    /// after stream padding (zero bytes in fours) another Stream Header must follow. Anything
    /// else is damage at the first offset that is wrong: a cut between two streams would
    /// otherwise pass for the end of the archive and lose the later streams' members unreported.
    static func nextStream(file: ArchiveFile, indexOffset: UInt64) throws -> NextStream {
        var position = indexOffset + 1  // past the Index Indicator
        var piece: [UInt8] = []
        var pieceStart = position
        func byte() throws -> UInt8? {
            if position < pieceStart || position >= pieceStart + UInt64(piece.count) {
                piece = try file.readAvailable(at: position, count: 1 << 16)
                pieceStart = position
                if piece.isEmpty { return nil }
            }
            defer { position += 1 }
            return piece[Int(position - pieceStart)]
        }
        func vli() throws -> UInt64? {
            var value: UInt64 = 0
            for shift in 0..<9 {
                guard let b = try byte() else { return nil }
                value |= UInt64(b & 0x7F) << (7 * UInt64(shift))
                if b & 0x80 == 0 { return value }
            }
            return nil
        }
        let damagedIndex = NextStream.damaged(offset: indexOffset, "the xz Index at offset \(indexOffset) is damaged")
        guard let records = try vli() else { return damagedIndex }
        var remaining = records
        while remaining > 0 {
            guard try vli() != nil, try vli() != nil else { return damagedIndex }
            remaining -= 1
        }
        let indexEnd = (position - indexOffset + 3) / 4 * 4 + 4 + indexOffset  // padding, CRC32
        guard indexEnd <= file.size, file.size - indexEnd >= UInt64(StreamFooter.size) else { return damagedIndex }
        let footer = try file.read(at: indexEnd, count: StreamFooter.size)
        guard let size = try? footer.withUnsafeBytes({ try StreamFooter.decode($0, fileOffset: indexEnd).indexSize }),
            size == indexEnd - indexOffset
        else {
            return .damaged(offset: indexEnd, "the Stream Footer at offset \(indexEnd) is damaged")
        }
        let streamEnd = indexEnd + UInt64(StreamFooter.size)
        var next = streamEnd
        while file.size - next >= 4, try file.read(at: next, count: 4).allSatisfy({ $0 == 0 }) { next += 4 }
        guard file.size - next >= UInt64(StreamHeader.size) else {
            return .damaged(
                offset: next, "after the stream that ends at offset \(streamEnd), \(file.size - next) bytes are not an xz stream")
        }
        let header = try file.read(at: next, count: StreamHeader.size)
        guard let check = try? header.withUnsafeBytes({ try StreamHeader.decode($0, fileOffset: next) }) else {
            // Zero bytes that are not a whole word of padding: the next header is misaligned.
            let why =
                header.first == 0
                ? "stream padding after offset \(streamEnd) is not a multiple of four bytes"
                : next == streamEnd
                    ? "the bytes at offset \(next), after a stream's end, are not an xz Stream Header"
                    : "the bytes at offset \(next), after \(next - streamEnd) bytes of stream padding, are not an xz Stream Header"
            return .damaged(offset: next, why)
        }
        return .stream(offset: next + UInt64(StreamHeader.size), check: check)
    }

    /// How the file ends, seen from the stream whose xz Index starts at `indexOffset`.
    enum EndOfFile {
        /// With a whole Stream Footer whose Index starts at `lastIndex` (at `indexOffset` when
        /// this stream is the last).
        case whole(lastIndex: UInt64)
        /// Cut short, for the reason given.
        case cut(String)
    }

    /// Whether the end of the file is the end of a whole xz stream, and where that stream's Index
    /// starts.
    ///
    /// Checked from the end: after any stream padding, the last 12 bytes must be a Stream Footer
    /// (magic and CRC32 intact) whose backward size fits between `indexOffset` and the footer. A
    /// file cut inside the xz Index or its footer fails this, so the cut is reported at the offset
    /// where the file ends. Nothing is held but the 12 bytes, whatever the Index declares.
    ///
    /// - Throws: ``ArchiveError`` for an I/O error reading the file; `CancellationError` is never
    ///   swallowed (none is thrown here).
    static func endOfFile(file: ArchiveFile, indexOffset: UInt64) throws -> EndOfFile {
        var end = file.size
        // Stream padding: zero bytes in groups of four after the footer.
        while end >= indexOffset + 4 + UInt64(StreamFooter.size) {
            let word = try file.read(at: end - 4, count: 4)
            guard word.allSatisfy({ $0 == 0 }) else { break }
            end -= 4
        }
        guard end >= indexOffset + UInt64(StreamFooter.size) + 4 else {
            return .cut("the file ends inside the xz Index")
        }
        let footerOffset = end - UInt64(StreamFooter.size)
        let bytes = try file.read(at: footerOffset, count: StreamFooter.size)
        let indexSize: UInt64
        do {
            indexSize = try bytes.withUnsafeBytes { try StreamFooter.decode($0, fileOffset: footerOffset).indexSize }
        } catch is XZError {
            return .cut("the file ends inside the xz Index or its Stream Footer")
        }
        // A later stream may follow this one (its own footer is the one at the end), so only a
        // footer whose Index would begin before this one is proof of a cut.
        guard footerOffset >= indexSize, footerOffset - indexSize >= indexOffset else {
            return .cut("the Stream Footer's index size (\(indexSize) bytes) does not fit after offset \(indexOffset)")
        }
        return .whole(lastIndex: footerOffset - indexSize)
    }
}
