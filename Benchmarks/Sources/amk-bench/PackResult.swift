import IndexedArchive

/// What the `_pack` child reports on its stdout, for the parent to read.
struct PackResult: Codable, Sendable {
    var entries: Int
    var fileBytes: UInt64
    var tarBytes: UInt64
    var archiveBytes: UInt64
    var blocks: Int
    var storedBlocks: Int
    var seconds: Double
    var warnings: Int

    init(_ summary: PackSummary) {
        entries = summary.entries
        fileBytes = summary.fileBytes
        tarBytes = summary.tarBytes
        archiveBytes = summary.archiveBytes
        blocks = summary.blocks
        storedBlocks = summary.storedBlocks
        seconds = summary.seconds
        warnings = summary.warnings.count
    }
}
