/// What a pack did.
public struct PackSummary: Sendable {
    /// Members written (files, directories, links).
    public var entries: Int
    /// Content bytes of the regular files stored.
    public var fileBytes: UInt64
    /// Length of the tar stream, headers and end marker included.
    public var tarBytes: UInt64
    /// Length of the archive written.
    public var archiveBytes: UInt64
    /// Data blocks written (the two index blocks are not counted).
    public var blocks: Int
    /// Data blocks stored uncompressed because they would not compress.
    public var storedBlocks: Int
    /// Data blocks compressed through the x86 branch filter (``PackOptions/filtersExecutables``).
    public var x86Blocks: Int
    /// Wall-clock time of the whole pack.
    public var seconds: Double
    /// What was skipped or tolerated.
    public var warnings: [PackWarning]

    /// Archive bytes over tar bytes.
    public var ratio: Double { tarBytes == 0 ? 0 : Double(archiveBytes) / Double(tarBytes) }
}
