/// One complete xz Block: Block Header (with compressed AND uncompressed size), data, padding and
/// CRC64 check, ready to be written into a stream.
public struct EncodedBlock: Sendable {
    /// The whole block, from the first Block Header byte to the last Check byte.
    public var bytes: [UInt8]
    /// Header + compressed data + check, without padding (`lzma_block_unpadded_size`); this is
    /// what the xz Index records for the block.
    public var unpaddedSize: UInt64
    /// Number of bytes the block decodes to.
    public var uncompressedSize: UInt64
    /// True when the data is stored as uncompressed LZMA2 chunks.
    public var isStored: Bool
    /// The branch filter before LZMA2 in the block's filter chain, if any.
    public var branch: BranchFilter?

    /// Creates a block description; `bytes.count` should be `unpaddedSize` rounded up to four.
    public init(bytes: [UInt8], unpaddedSize: UInt64, uncompressedSize: UInt64, isStored: Bool, branch: BranchFilter? = nil) {
        self.bytes = bytes
        self.unpaddedSize = unpaddedSize
        self.uncompressedSize = uncompressedSize
        self.isStored = isStored
        self.branch = branch
    }
}
