/// One block as the xz Index describes it, placed in the file and in the decompressed output.
public struct XZIndexRecord: Sendable, Equatable {
    /// File offset of the Block Header.
    public var compressedOffset: UInt64
    /// Offset of the block's first byte in the decompressed output (across all streams of a
    /// multi-stream file).
    public var uncompressedOffset: UInt64
    /// Header + compressed data + check, without padding, as recorded in the xz Index.
    public var unpaddedSize: UInt64
    /// `unpaddedSize` rounded up to a multiple of four: the block's size in the file.
    public var totalSize: UInt64
    /// Number of bytes the block decodes to.
    public var uncompressedSize: UInt64

    /// Creates a record.
    public init(compressedOffset: UInt64, uncompressedOffset: UInt64, unpaddedSize: UInt64, totalSize: UInt64, uncompressedSize: UInt64) {
        self.compressedOffset = compressedOffset
        self.uncompressedOffset = uncompressedOffset
        self.unpaddedSize = unpaddedSize
        self.totalSize = totalSize
        self.uncompressedSize = uncompressedSize
    }
}
