/// The structure of an archive file, as `amk info` shows it.
public struct ArchiveInfo: Sendable {
    /// xz streams in the file.
    public var streams: Int
    /// All xz blocks, index blocks included.
    public var blocks: Int
    /// Blocks of the tar stream: all but the index blocks at the end (ours and pixz's).
    public var dataBlocks: Int
    /// Bytes of the archive file.
    public var fileSize: UInt64
    /// Decompressed bytes of the whole file.
    public var uncompressedSize: UInt64
    /// Length of the tar stream, when the index gives it.
    public var tarSize: UInt64?
    /// Uncompressed bytes per data block, when the index gives it.
    public var chunkSize: UInt64?
    /// Members listed by the index.
    public var indexedEntries: Int?
    /// Whether the archive has our index (random access) or is read sequentially.
    public var isIndexed: Bool
    /// Whether the archive carries pixz's file index, which `pixz -l` and `pixz -x` read.
    public var hasPixzIndex: Bool
    /// The archive's metadata, empty without our index.
    public var metadata: [String: String]

    /// File size over uncompressed size.
    public var ratio: Double { uncompressedSize == 0 ? 0 : Double(fileSize) / Double(uncompressedSize) }
}
