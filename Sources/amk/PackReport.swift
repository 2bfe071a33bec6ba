import IndexedArchive

/// `amk pack --json`: the summary as one object. Sizes in bytes; `archive` is the path given to
/// `-o` (`-` for standard output).
struct PackReport: Encodable {
    var archive: String
    var entries: Int
    /// Content bytes of the files stored.
    var fileBytes: UInt64
    /// The tar stream's bytes, headers included.
    var tarBytes: UInt64
    var archiveBytes: UInt64
    /// `archiveBytes / tarBytes`.
    var ratio: Double
    var blocks: Int
    var storedBlocks: Int
    /// Blocks compressed through the x86 branch filter.
    var x86Blocks: Int
    var seconds: Double
    var warnings: [Warning]

    struct Warning: Encodable {
        var path: String
        var message: String
    }

    init(_ summary: PackSummary, archive: String) {
        self.archive = archive
        entries = summary.entries
        fileBytes = summary.fileBytes
        tarBytes = summary.tarBytes
        archiveBytes = summary.archiveBytes
        ratio = summary.ratio
        blocks = summary.blocks
        storedBlocks = summary.storedBlocks
        x86Blocks = summary.x86Blocks
        seconds = summary.seconds
        warnings = summary.warnings.map { Warning(path: $0.path, message: $0.message) }
    }
}
