import XZ

/// One xz block of an archive file, decoded a piece at a time.
///
/// A block's sizes come from the file, so they are not trusted: a 600 KB archive can describe a
/// block that decodes to 4 GiB, or one whose compressed size is 2^62 bytes. This reads the
/// compressed side in pieces of ``inputPiece`` bytes and hands the output over in slices, as the
/// caller asks for them; neither side is ever held whole, and no buffer is sized from a value in
/// the file. The memory it holds is one input piece plus the decoder's (the LZMA2 dictionary,
/// bounded by the decoder's memory limit).
///
/// Not `Sendable`, like the ``BlockDecoder`` it drives: one job uses it at a time.
final class BlockStream {
    /// Compressed bytes read from the file at once.
    static let inputPiece = 1 << 20

    let file: ArchiveFile
    /// Where the block starts in the file.
    let offset: UInt64
    /// The block's size in the file (header, data, padding, check), as the xz Index or the
    /// Block Header gives it.
    let totalSize: UInt64
    /// What the block must decode to, when known.
    let uncompressedSize: UInt64?
    let check: XZCheck
    private let decoder: BlockDecoder
    /// Where `input` comes from and goes back to, when the caller reads many blocks.
    private let inputs: ByteArrayPool?
    private var input: [UInt8]
    private var inputUsed = 0
    /// Offset in the file of the next compressed byte to read.
    private var nextRead: UInt64 = 0
    private var started = false

    /// A block whose place the xz Index gives.
    convenience init(file: ArchiveFile, record: XZIndexRecord, check: XZCheck, decoder: BlockDecoder, inputs: ByteArrayPool? = nil) {
        self.init(
            file: file, offset: record.compressedOffset, totalSize: record.totalSize,
            uncompressedSize: record.uncompressedSize, check: check, decoder: decoder, inputs: inputs)
    }

    /// Whether `totalSize` is only an upper bound: a block whose header carries no sizes (as
    /// `xz` writes a single-threaded stream) ends where its data and check end, which
    /// ``endOffset`` gives once it is finished.
    let isOpenEnded: Bool
    /// Offset in the file just past the block's check, once ``isFinished``.
    private(set) var endOffset: UInt64?

    init(
        file: ArchiveFile, offset: UInt64, totalSize: UInt64, uncompressedSize: UInt64?, check: XZCheck, decoder: BlockDecoder,
        isOpenEnded: Bool = false, inputs: ByteArrayPool? = nil
    ) {
        self.inputs = inputs
        self.input = ByteArrayPool.take(from: inputs, minimumCapacity: Int(min(totalSize, UInt64(Self.inputPiece))))
        self.isOpenEnded = isOpenEnded
        self.file = file
        self.offset = offset
        self.totalSize = totalSize
        self.uncompressedSize = uncompressedSize
        self.check = check
        self.decoder = decoder
    }

    deinit {
        inputs?.recycle(input)
    }

    /// Uncompressed bytes delivered so far.
    var delivered: UInt64 { started ? decoder.deliveredBytes : 0 }

    /// Whether the whole block has been decoded and its check verified.
    var isFinished: Bool { started && decoder.isFinished }

    /// Decodes up to `maxBytes` more bytes into `output`, in slices of at most 256 KiB.
    ///
    /// - Returns: the bytes delivered by this call; fewer than `maxBytes` only when the block
    ///   ended (then ``isFinished`` is true).
    /// - Throws: ``ArchiveError`` `.corrupt` naming the file and the offset for a damaged block,
    ///   one whose sizes disagree with the xz Index, or one that runs past its place in the file;
    ///   `CancellationError`; whatever `output` throws.
    @discardableResult
    func decode(
        maxBytes: Int, isCancelled: () -> Bool = { false },
        output: (UnsafeRawBufferPointer) throws -> Void
    ) throws -> Int {
        do {
            return try decodeThrowingXZ(maxBytes: maxBytes, isCancelled: isCancelled, output: output)
        } catch let error as XZError {
            throw ArchiveError(
                error.code == .memoryLimit ? .limitExceeded : .corrupt, AddressSpace.explained(error),
                path: file.path, offset: error.offset ?? offset, underlying: error)
        }
    }

    private func decodeThrowingXZ(
        maxBytes: Int, isCancelled: () -> Bool,
        output: (UnsafeRawBufferPointer) throws -> Void
    ) throws -> Int {
        let (end, overflow) = offset.addingReportingOverflow(totalSize)
        guard !overflow, end <= file.size else {
            throw ArchiveError(
                .corrupt, "block of \(totalSize) bytes runs past the end of the file (\(file.size) bytes)",
                path: file.path, offset: offset)
        }
        if !started {
            // A Block Header is at most 1024 bytes.
            let head = try file.read(at: offset, count: Int(min(totalSize, 1024)))
            let headerSize = try head.withUnsafeBytes { raw in
                try decoder.begin(header: raw, check: check, fileOffset: offset, uncompressedSize: uncompressedSize)
            }
            started = true
            nextRead = offset + UInt64(headerSize)
        }
        var deliveredHere = 0
        while deliveredHere < maxBytes && !decoder.isFinished {
            if inputUsed == input.count {
                let count = Int(min(UInt64(Self.inputPiece), end - nextRead))
                guard count > 0 else {
                    throw ArchiveError(
                        .corrupt, "block does not end within the \(totalSize) bytes the index gives it",
                        path: file.path, offset: offset)
                }
                try file.read(at: nextRead, count: count, into: &input)
                inputUsed = 0
                nextRead += UInt64(count)
            }
            let before = deliveredHere
            let (consumed, finished) = try input.withUnsafeBytes { raw in
                try decoder.decode(
                    UnsafeRawBufferPointer(rebasing: raw[inputUsed...]), maxOutput: maxBytes - deliveredHere,
                    isCancelled: isCancelled
                ) { slice in
                    deliveredHere += slice.count
                    try output(slice)
                }
            }
            inputUsed += consumed
            if finished {
                // liblzma has read the padding and the check too: what is left of the block's
                // place in the file must be nothing.
                let unread = UInt64(input.count - inputUsed) + (end - nextRead)
                endOffset = end - unread
                guard unread == 0 || isOpenEnded else {
                    throw ArchiveError(
                        .corrupt, "block ends \(unread) bytes before the end the index gives it",
                        path: file.path, offset: offset)
                }
                input.removeAll(keepingCapacity: true)
                inputUsed = 0
            } else if consumed == 0 && deliveredHere == before && inputUsed < input.count {
                // Input left, yet no progress: cannot happen with liblzma; refuse rather than spin.
                throw ArchiveError(.corrupt, "block decoder made no progress", path: file.path, offset: offset)
            }
        }
        return deliveredHere
    }
}
