/// The xz Index of a whole file (one or many concatenated streams, with stream padding), read
/// from its end by random access, as `xz -l` and pixz do.
public struct XZFileIndex: Sendable {
    /// The streams, in file order.
    public var streams: [XZStreamInfo]
    /// All blocks of all streams, in order.
    public var blocks: [XZIndexRecord]
    /// Size of the whole decompressed output.
    public var uncompressedSize: UInt64
    /// Size of the file the index was read from.
    public var fileSize: UInt64

    /// Creates an index from streams in file order whose records already carry absolute offsets.
    public init(streams: [XZStreamInfo], fileSize: UInt64) {
        self.streams = streams
        self.blocks = streams.flatMap(\.blocks)
        self.uncompressedSize = streams.reduce(UInt64(0)) { $0 &+ $1.uncompressedSize }
        self.fileSize = fileSize
    }

    /// Largest chunk read at once while scanning padding or parsing an index, so that memory
    /// stays small whatever the footer claims.
    static let readChunk = 64 * 1024
    /// The smallest possible stream: header, an empty index (8 bytes), footer.
    static let minimumStreamSize: UInt64 = 32

    /// Reads the index of a file by walking back from its end: stream padding, footer, xz Index,
    /// stream header, stream by stream.
    ///
    /// Sizes are checked against the file before anything is read, and the xz Index is read in
    /// bounded pieces, so a lying footer cannot make this allocate more than the file holds.
    ///
    /// - Parameters:
    ///   - fileSize: size of the file in bytes.
    ///   - maxBlocks: the most blocks accepted over all streams (and the most streams).
    ///   - read: returns exactly `count` bytes at `offset` (the caller does `pread`).
    /// - Throws: `XZError` naming the offset: `.format` for a file that is not .xz, `.truncated`
    ///   for one cut short, `.corruptIndex` when footer, index and header disagree, `.data` for a
    ///   bad CRC, `.memoryLimit` for more than `maxBlocks` blocks or streams; whatever `read` throws.
    public static func read(fileSize: UInt64, maxBlocks: Int = 50_000_000, read: (UInt64, Int) throws -> [UInt8]) throws -> XZFileIndex {
        try withoutActuallyEscaping(read) { read in
            try walk(fileSize: fileSize, maxBlocks: maxBlocks, reader: Reader(read: read))
        }
    }

    private static func walk(fileSize: UInt64, maxBlocks: Int, reader: Reader) throws -> XZFileIndex {
        guard fileSize > 0 else {
            throw XZError(code: .format, message: "empty file is not an xz file", offset: 0)
        }
        // Enough of the start to say what a file that is not xz is.
        let start = try reader.bytes(at: 0, count: Int(min(fileSize, UInt64(ForeignFormat.headSize))), what: "file start")
        let head = Array(start.prefix(StreamHeader.magic.count))
        guard head == Array(StreamHeader.magic.prefix(head.count)) else {
            let message =
                ForeignFormat.describe(start) == nil
                ? "not an xz file: the magic bytes FD 37 7A 58 5A 00 are missing" : ForeignFormat.notXZMessage(start)
            throw XZError(code: .format, message: message, offset: 0)
        }
        guard fileSize >= minimumStreamSize else {
            throw XZError(code: .truncated, message: "file of \(fileSize) bytes is too short to hold an xz stream", offset: fileSize)
        }
        guard fileSize % 4 == 0 else {
            throw XZError(
                code: .truncated,
                message: "file size \(fileSize) is not a multiple of four: the file is truncated or has bytes appended",
                offset: fileSize)
        }

        var found: [XZStreamInfo] = []
        var blockBudget = max(0, maxBlocks)
        var position = fileSize
        while position > 0 {
            let end = position
            position = try reader.skipPadding(before: position)
            let padding = end - position
            guard position >= minimumStreamSize else {
                if position == 0 {
                    throw XZError(code: .format, message: "file starts with stream padding instead of a stream header", offset: 0)
                }
                throw XZError(
                    code: .corruptIndex,
                    message: "\(position) bytes before offset \(position) are too few for an xz stream",
                    offset: position)
            }
            // Empty streams cost no block records but still memory; they share the cap.
            guard found.count < max(1, maxBlocks) else {
                throw XZError(
                    code: .memoryLimit,
                    message: "file holds more than \(maxBlocks) streams, the limit",
                    offset: position)
            }
            let stream: XZStreamInfo
            do {
                stream = try reader.stream(endingAt: position, padding: padding, blockBudget: blockBudget)
            } catch let error as XZError where error.code == .format && position == fileSize {
                // The file starts like xz, so a missing footer at its very end means it was cut.
                throw XZError(
                    code: .truncated,
                    message: "no stream footer at the end of the file: it is truncated or has data appended (\(error.message))",
                    offset: error.offset)
            }
            blockBudget -= stream.blocks.count
            found.append(stream)
            position = stream.headerOffset
        }
        found.reverse()

        var uncompressedOffset: UInt64 = 0
        for s in found.indices {
            found[s].uncompressedSize = 0
            for b in found[s].blocks.indices {
                found[s].blocks[b].uncompressedOffset = uncompressedOffset
                let size = found[s].blocks[b].uncompressedSize
                let (next, overflow) = uncompressedOffset.addingReportingOverflow(size)
                guard !overflow, next <= VLI.max else {
                    throw XZError(
                        code: .corruptIndex,
                        message: "decompressed size of the file exceeds 2^63 bytes",
                        offset: found[s].headerOffset)
                }
                uncompressedOffset = next
                found[s].uncompressedSize += size
            }
        }
        return XZFileIndex(streams: found, fileSize: fileSize)
    }

    /// Index into ``blocks`` of the block holding decompressed byte `uncompressedOffset`, or nil
    /// when the offset is at or past the end. Empty blocks are never returned.
    public func locate(uncompressedOffset: UInt64) -> Int? {
        var low = 0
        var high = blocks.count
        // First block whose end lies past the offset; ends never decrease.
        while low < high {
            let mid = low + (high - low) / 2
            let block = blocks[mid]
            let (end, overflow) = block.uncompressedOffset.addingReportingOverflow(block.uncompressedSize)
            if overflow || end > uncompressedOffset {
                high = mid
            } else {
                low = mid + 1
            }
        }
        guard low < blocks.count, blocks[low].uncompressedOffset <= uncompressedOffset else { return nil }
        return low
    }

    /// Check type of the stream holding block `blockIndex` (`.none` for an index out of range).
    public func check(ofBlock blockIndex: Int) -> XZCheck {
        guard blockIndex >= 0 else { return .none }
        var first = 0
        for stream in streams {
            if blockIndex < first + stream.blocks.count { return stream.check }
            first += stream.blocks.count
        }
        return .none
    }
}

extension XZFileIndex {
    /// Walks a file backwards through the caller's `read`, checking every size before use.
    private struct Reader {
        let read: (UInt64, Int) throws -> [UInt8]

        func bytes(at offset: UInt64, count: Int, what: String) throws -> [UInt8] {
            let bytes = try read(offset, count)
            guard bytes.count == count else {
                throw XZError(
                    code: .truncated,
                    message: "short read of \(what): wanted \(count) bytes, got \(bytes.count)",
                    offset: offset)
            }
            return bytes
        }

        /// Moves back over zero bytes in groups of four, returning where the padding starts.
        func skipPadding(before end: UInt64) throws -> UInt64 {
            var position = end
            var chunk = 4096
            while position > 0 {
                let count = Int(min(UInt64(chunk), position))
                let bytes = try self.bytes(at: position - UInt64(count), count: count, what: "stream padding")
                var group = count
                while group >= 4 && bytes[group - 4] == 0 && bytes[group - 3] == 0 && bytes[group - 2] == 0 && bytes[group - 1] == 0 {
                    group -= 4
                }
                position -= UInt64(count - group)
                if group > 0 { break }
                chunk = min(chunk * 4, XZFileIndex.readChunk)
            }
            return position
        }

        /// Decodes the stream whose footer ends at `end`.
        func stream(endingAt end: UInt64, padding: UInt64, blockBudget: Int) throws -> XZStreamInfo {
            let headerSize = UInt64(StreamHeader.size)
            let footerOffset = end - UInt64(StreamFooter.size)
            let footer = try bytes(at: footerOffset, count: StreamFooter.size, what: "stream footer")
            let (check, indexSize) = try footer.withUnsafeBytes {
                try StreamFooter.decode($0, fileOffset: footerOffset)
            }
            guard indexSize <= footerOffset - headerSize else {
                throw XZError(
                    code: .corruptIndex,
                    message:
                        "stream footer gives an xz Index of \(indexSize) bytes, more than the \(footerOffset - headerSize) bytes before it",
                    offset: footerOffset)
            }
            let indexOffset = footerOffset - indexSize
            let sizes = try parseIndex(at: indexOffset, size: indexSize, blockBudget: blockBudget)

            var blocksSize: UInt64 = 0
            for (unpadded, _) in sizes {
                let (sum, overflow) = blocksSize.addingReportingOverflow((unpadded + 3) & ~3)
                blocksSize = sum
                guard !overflow, blocksSize <= indexOffset - headerSize else {
                    throw XZError(
                        code: .corruptIndex,
                        message: "xz Index describes more block bytes than the \(indexOffset - headerSize) bytes before it",
                        offset: indexOffset)
                }
            }
            let headerOffset = indexOffset - blocksSize - headerSize
            let header = try bytes(at: headerOffset, count: StreamHeader.size, what: "stream header")
            let headerCheck: XZCheck
            do {
                headerCheck = try header.withUnsafeBytes { try StreamHeader.decode($0, fileOffset: headerOffset) }
            } catch let error as XZError {
                throw XZError(
                    code: .corruptIndex,
                    message: "no valid stream header where the xz Index places the stream's start (\(error.message))",
                    offset: headerOffset)
            }
            guard headerCheck == check else {
                throw XZError(
                    code: .corruptIndex,
                    message: "stream header (check \(headerCheck)) and stream footer (check \(check)) disagree",
                    offset: headerOffset)
            }

            var records: [XZIndexRecord] = []
            records.reserveCapacity(sizes.count)
            var offset = headerOffset + headerSize
            for (unpadded, uncompressed) in sizes {
                let total = (unpadded + 3) & ~3
                records.append(
                    XZIndexRecord(
                        compressedOffset: offset, uncompressedOffset: 0,
                        unpaddedSize: unpadded, totalSize: total, uncompressedSize: uncompressed))
                offset += total
            }
            return XZStreamInfo(
                headerOffset: headerOffset, check: check, blocks: records,
                indexSize: indexSize, uncompressedSize: 0, padding: padding)
        }

        /// Parses the xz Index field in bounded pieces, verifying its structure and CRC32.
        func parseIndex(at indexOffset: UInt64, size indexSize: UInt64, blockBudget: Int) throws -> [(UInt64, UInt64)] {
            // Indicator, a one-byte count, padding to four, CRC32.
            guard indexSize >= 8, indexSize % 4 == 0 else {
                throw XZError(code: .corruptIndex, message: "xz Index size \(indexSize) is impossible", offset: indexOffset)
            }
            let bodySize = indexSize - 4
            var buffer: [UInt8] = []
            var cursor = 0
            var consumed: UInt64 = 0
            var crc: UInt32 = 0

            func corrupt(_ message: String) -> XZError {
                XZError(code: .corruptIndex, message: message, offset: indexOffset + consumed)
            }
            func nextByte() throws -> UInt8 {
                guard consumed < bodySize else {
                    throw corrupt("xz Index records run past the index size the stream footer gives")
                }
                if cursor == buffer.count {
                    crc = CRC.crc32(buffer, previous: crc)
                    let count = Int(min(UInt64(XZFileIndex.readChunk), bodySize - consumed))
                    buffer = try bytes(at: indexOffset + consumed, count: count, what: "xz Index")
                    cursor = 0
                }
                let byte = buffer[cursor]
                cursor += 1
                consumed += 1
                return byte
            }

            guard try nextByte() == 0 else { throw corrupt("xz Index indicator byte is not 0x00") }
            guard let count = try VLI.decode(nextByte) else { throw corrupt("invalid record count in xz Index") }
            // Every record takes at least two bytes; a count that cannot fit is a lie.
            guard count <= (bodySize - consumed) / 2 else {
                throw corrupt("xz Index claims \(count) blocks but has room for at most \((bodySize - consumed) / 2)")
            }
            guard count <= UInt64(blockBudget) else {
                throw XZError(
                    code: .memoryLimit,
                    message: "xz Index lists \(count) blocks, more than the remaining limit of \(blockBudget)",
                    offset: indexOffset)
            }
            var sizes: [(UInt64, UInt64)] = []
            sizes.reserveCapacity(Int(min(count, 1 << 16)))
            for _ in 0..<count {
                guard let unpadded = try VLI.decode(nextByte) else { throw corrupt("invalid unpadded size in xz Index") }
                guard unpadded >= XZIndexBuilder.minimumUnpaddedSize, unpadded <= VLI.max & ~3 else {
                    throw corrupt("xz Index record has impossible unpadded size \(unpadded)")
                }
                guard let uncompressed = try VLI.decode(nextByte) else { throw corrupt("invalid uncompressed size in xz Index") }
                sizes.append((unpadded, uncompressed))
            }
            while consumed % 4 != 0 {
                guard try nextByte() == 0 else { throw corrupt("xz Index padding is not zero") }
            }
            guard consumed == bodySize else {
                throw corrupt("xz Index has \(bodySize - consumed) bytes after its records")
            }
            crc = CRC.crc32(buffer, previous: crc)
            let stored = try bytes(at: indexOffset + bodySize, count: 4, what: "xz Index CRC32")
            let expected = UInt32(stored[0]) | UInt32(stored[1]) << 8 | UInt32(stored[2]) << 16 | UInt32(stored[3]) << 24
            guard crc == expected else {
                throw XZError(code: .corruptIndex, message: "xz Index CRC32 mismatch", offset: indexOffset + bodySize)
            }
            return sizes
        }
    }
}
