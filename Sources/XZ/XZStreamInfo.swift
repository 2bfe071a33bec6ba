/// One stream found in an .xz file, with its blocks.
public struct XZStreamInfo: Sendable {
    /// File offset of the Stream Header.
    public var headerOffset: UInt64
    /// The check type of the stream's blocks.
    public var check: XZCheck
    /// The stream's blocks, with offsets absolute in the file and in the whole decompressed output.
    public var blocks: [XZIndexRecord]
    /// Size of the stream's xz Index field in bytes.
    public var indexSize: UInt64
    /// Sum of the uncompressed sizes of the stream's blocks.
    public var uncompressedSize: UInt64
    /// Bytes of Stream Padding that follow this stream.
    public var padding: UInt64

    /// Creates a stream description.
    public init(headerOffset: UInt64, check: XZCheck, blocks: [XZIndexRecord], indexSize: UInt64, uncompressedSize: UInt64, padding: UInt64)
    {
        self.headerOffset = headerOffset
        self.check = check
        self.blocks = blocks
        self.indexSize = indexSize
        self.uncompressedSize = uncompressedSize
        self.padding = padding
    }
}
