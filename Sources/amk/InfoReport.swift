import IndexedArchive

/// `amk info --json`. Sizes in bytes; a figure the archive does not record is null.
struct InfoReport: Encodable {
    var archive: String
    var fileSize: UInt64
    /// All decompressed bytes (the tar stream and, in an amk archive, its index blocks).
    var uncompressedSize: UInt64
    /// `fileSize / tarSize` when the tar size is known, else `fileSize / uncompressedSize`.
    var ratio: Double
    var streams: Int
    var blocks: Int
    var dataBlocks: Int
    @AlwaysPresent var tarSize: UInt64?
    @AlwaysPresent var chunkSize: UInt64?
    /// Whether the archive carries the amk index (random access).
    var indexed: Bool
    /// Members the amk index lists; null without one.
    @AlwaysPresent var indexedEntries: Int?
    var pixzIndex: Bool
    /// The `AMK.*` pax metadata (writer, exporter version, source app...).
    var metadata: [String: String]

    init(_ info: ArchiveInfo, archive: String) {
        self.archive = archive
        fileSize = info.fileSize
        uncompressedSize = info.uncompressedSize
        ratio = InfoCommand.ratio(info)
        streams = info.streams
        blocks = info.blocks
        dataBlocks = info.dataBlocks
        tarSize = info.tarSize
        chunkSize = info.chunkSize
        indexed = info.isIndexed
        indexedEntries = info.indexedEntries
        pixzIndex = info.hasPixzIndex
        metadata = info.metadata
    }
}
