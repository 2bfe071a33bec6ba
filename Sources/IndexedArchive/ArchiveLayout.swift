import Tar
import XZ

/// What an archive's end says about it, read when it is opened: the xz Index (every block's
/// place) and, for an archive of ours, the rich index and the pixz index after the data blocks.
///
/// Reading it decodes no data: only the first bytes of the pixz index block, the rich index's
/// header, and then (once the header's promises are held to the limits) the rich index itself.
struct ArchiveLayout: Sendable {
    /// The xz Index; nil when the end of the file is damaged or the file is not xz.
    var fileIndex: XZFileIndex?
    /// Why the xz Index could not be read, when it could not.
    var fileIndexProblem: String?
    /// Our rich index, for an archive of ours (unless only its paths were asked for).
    var index: ArchiveIndex?
    /// The members' paths from our rich index, when only they were asked for.
    var paths: MemberPathList?
    /// The selection ``index`` was decoded for, when it holds only the members the selection
    /// chooses (see `selecting` in ``read(file:path:maxIndexBytes:maxEntries:maxDecoderMemory:pathsOnly:selecting:)``).
    var selection: MemberFilter? = nil
    /// Members the rich index lists, all of them even when ``index`` holds a selection.
    var memberCount: Int? = nil
    /// Whether the last block is a pixz file index.
    var hasPixzIndex: Bool
    /// The blocks read as tar stream: those before our index blocks (every block of a foreign
    /// archive, whose pixz index, if any, is read as what follows its tar stream).
    var dataBlockCount: Int
    /// Why our rich index was left unread, when its names add up to more than the file's
    /// allowance: the archive is then read from its tar stream, as one without the index.
    var indexSkipped: String? = nil
    /// The damage found in the pixz index block, which no member's bytes depend on: an
    /// extraction writes every member, then fails with it.
    var pixzIndexDamage: ArchiveError? = nil

    /// Reads the end of `file` (named `path` in errors). Limits as in ``ArchiveReader/init(path:maxIndexBytes:maxEntries:maxBufferedBlockSize:maxDecoderMemory:)``.
    /// With `pathsOnly`, the rich index is decoded only as far as its members' paths, which go to
    /// ``paths`` instead of ``index``. With `selecting` (at most ``TarConsumer/fewMembers``
    /// members), ``index`` holds only the entries the selection chooses, as an extraction of
    /// those members matches them, when the index's layout allows it: ``selection`` says so.
    /// The whole index is still decoded and checked.
    static func read(
        file: ArchiveFile, path: String, maxIndexBytes: Int?, maxEntries: Int?, maxDecoderMemory: UInt64,
        pathsOnly: Bool = false, selecting: MemberFilter? = nil
    ) throws -> ArchiveLayout {
        precondition(selecting.map { $0.count <= TarConsumer.fewMembers } ?? true, "a selection of more than a few members")
        var fileIndex: XZFileIndex?
        var problem: String?
        do {
            fileIndex = try XZFileIndex.read(fileSize: file.size) { offset, count in try file.read(at: offset, count: count) }
        } catch let error as XZError {
            // A file that does not start as xz (empty, random, gzip) is no archive at all: said
            // now, as opening promises to read the file. A damaged end is read on: the sequential
            // reader says what is wrong when the archive is read, and salvage recovers the rest.
            let magic = StreamDecoder.headerMagic
            let head = file.size == 0 ? [] : (try? file.read(at: 0, count: magic.count)) ?? []
            if head.count < magic.count || !head.elementsEqual(magic) {
                throw ArchiveError(.notAnArchive, error.message, path: path, offset: 0)
            }
            fileIndex = nil
            problem = error.description
        }
        var index: ArchiveIndex?
        var paths: MemberPathList?
        var selection: MemberFilter?
        var memberCount: Int?
        var pixz = false
        var pixzDamage: ArchiveError?
        var skipped: String?
        var dataBlocks = fileIndex?.blocks.count ?? 0
        // pixz writes its file index as the last block of one stream, after at least one block
        // of tar stream; ours comes with the rich index before it.
        if let fileIndex, fileIndex.streams.count == 1, fileIndex.blocks.count >= 2 {
            let blocks = fileIndex.blocks
            let last = blocks[blocks.count - 1]
            let check = fileIndex.check(ofBlock: blocks.count - 1)
            func block(_ record: XZIndexRecord) -> IndexBlock {
                IndexBlock(file: file, record: record, check: check, maxDecoderMemory: maxDecoderMemory)
            }
            // A small pixz index is decoded whole, so that damage to it is found at once; a
            // large one only as far as its magic (verify reads it all). Damage there failed the
            // opening, and no member was extracted though none depends on that block: it is
            // kept for the end of an extraction instead. A last block whose first bytes cannot
            // be decoded is not taken for a pixz index, but for tar stream, damaged where the
            // reading will meet it (an `xz -T` archive's small last block was read here too).
            let smallBlock = UInt64(BlockStream.inputPiece / 4)
            let probe = block(last)
            do {
                if PixzIndex.hasMagic(try probe.first(8)) {
                    pixz = true
                    if last.uncompressedSize <= smallBlock { _ = try probe.first(nil) }
                }
                // cancellation: ArchiveError only, the damage of the last block, kept or met later
            } catch let error as ArchiveError where error.code == .corrupt || error.code == .checksumMismatch {
                if pixz { pixzDamage = error }
            } catch let error as ArchiveError
                where error.code == .limitExceeded && blocks.count >= 3
                && ((try? ArchiveIndex.hasMagic(block(blocks[blocks.count - 2]).first(UInt64(ArchiveIndex.magic.count)))) ?? false)
            {
                // A last block that would take more memory than allowed, after our index: where
                // amk writes pixz's index, unreadable here as a damaged one is, and kept for the
                // end alike. It refused the opening, and no member came out, though none is in it.
                pixz = true
                pixzDamage = error
            }
            if pixz, blocks.count >= 3 {
                let rich = blocks[blocks.count - 2]
                // Decoded as far as each step needs, from where the step before stopped.
                let richBlock = block(rich)
                let richHead = try richBlock.first(UInt64(ArchiveIndex.headerSize))
                if ArchiveIndex.hasMagic(richHead) {
                    let indexLimit = maxIndexBytes ?? ArchiveReader.indexAllowance(fileSize: file.size)
                    guard rich.uncompressedSize <= UInt64(clamping: indexLimit) else {
                        throw ArchiveError(
                            .limitExceeded, "index block of \(rich.uncompressedSize) bytes exceeds the limit of \(indexLimit)",
                            path: path, offset: rich.compressedOffset)
                    }
                    do {
                        // Everything the header promises is checked before the block is decoded.
                        let entryLimit = maxEntries ?? ArchiveReader.defaultMaxEntries
                        let archiveSize = maxEntries == nil ? file.size : nil
                        let header = try ArchiveIndex.header(
                            richHead, maxEntries: entryLimit, archiveSize: archiveSize,
                            blockOffset: rich.compressedOffset)
                        guard header.tarSize == rich.uncompressedOffset else {
                            throw ArchiveError(
                                .corrupt, "index says the tar stream is \(header.tarSize) bytes, blocks say \(rich.uncompressedOffset)",
                                offset: rich.compressedOffset)
                        }
                        guard header.byteCount <= rich.uncompressedSize else {
                            throw ArchiveError(
                                .corrupt,
                                "archive index: its header describes \(header.byteCount) bytes, the block holds \(rich.uncompressedSize)",
                                offset: rich.compressedOffset)
                        }
                        if pathsOnly {
                            // The names lead the index: decoding stops after them (the block's
                            // check, at its end, is left to a full reading).
                            let bytes = try richBlock.first(header.pathsByteCount)
                            paths = try ArchiveIndex.decodePaths(
                                bytes, header: header, blockOffset: rich.compressedOffset, maxNameBytes: indexLimit)
                        } else {
                            let bytes = try richBlock.first(nil)
                            let keep = selecting.map { members in
                                { (path: ArraySlice<UInt8>) in members.selects(utf8: path) }
                            }
                            let decoded = try ArchiveIndex.decode(
                                bytes, maxEntries: entryLimit, archiveSize: archiveSize,
                                blockOffset: rich.compressedOffset, maxNameBytes: indexLimit, keeping: keep)
                            index = decoded.index
                            if decoded.kept { selection = selecting }
                        }
                        memberCount = header.count
                        dataBlocks = blocks.count - 2
                    } catch let error as ArchiveError
                        where maxIndexBytes == nil && error.underlying is ArchiveIndex.NameBudget.OverAllowance
                    {
                        // The front-coded names of thousands of long paths fit in a small file but
                        // not in what its size allows, and `amk pack` writes such archives: they
                        // are read from the tar stream, which holds every name in full, with the
                        // memory of an archive without the index, instead of being refused.
                        skipped =
                            "its index's names add up to more than the \(indexLimit) bytes read for a file "
                            + "of \(file.size) bytes; read from its tar stream instead"
                        dataBlocks = blocks.count - 2
                    } catch var error as ArchiveError {
                        error.path = path
                        throw error
                    }
                }
            }
        }
        return ArchiveLayout(
            fileIndex: fileIndex, fileIndexProblem: problem, index: index, paths: paths, selection: selection,
            memberCount: memberCount, hasPixzIndex: pixz, dataBlockCount: dataBlocks, indexSkipped: skipped,
            pixzIndexDamage: pixzDamage)
    }

    /// An index block, decoded as far as it is asked for and never twice: the header first,
    /// then the names or the whole block from where the header stopped, by the same decoder.
    /// For the index blocks, whose size the caller holds to a limit before asking for more than
    /// a header.
    final class IndexBlock {
        private let stream: BlockStream
        private let size: UInt64
        /// What has been decoded so far.
        private var bytes: [UInt8] = []

        init(file: ArchiveFile, record: XZIndexRecord, check: XZCheck, maxDecoderMemory: UInt64) {
            stream = BlockStream(file: file, record: record, check: check, decoder: BlockDecoder(memoryLimit: maxDecoderMemory))
            size = record.uncompressedSize
        }

        /// The block's first `count` bytes, or all of them (its check verified) when `count` is
        /// nil.
        func first(_ count: UInt64?) throws -> [UInt8] {
            let wanted = Int(min(count ?? size, size))
            if bytes.count < wanted || (count == nil && !stream.isFinished) {
                bytes.reserveCapacity(wanted)
                // Whole: ask for more than the block holds, so that it is read to its end and its
                // check verified; the decoder refuses output past the size the xz Index gives.
                try stream.decode(maxBytes: count == nil ? .max : wanted - bytes.count) { bytes.append(contentsOf: $0) }
            }
            return bytes.count <= wanted ? bytes : Array(bytes[..<wanted])
        }
    }
}
