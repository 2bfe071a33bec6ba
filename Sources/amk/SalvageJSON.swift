import IndexedArchive

/// `amk salvage --json`.
struct SalvageJSON: Encodable {
    var archive: String
    var directory: String
    /// No damage found and nothing lost (exit status 0).
    var whole: Bool
    /// Members written, in archive order.
    var recovered: [String]
    /// Members lost to the damage.
    var lost: [String]
    /// False when the index was unreadable: members after the damage are then unknown.
    var lostIsComplete: Bool
    var goodBlocks: Int
    var damagedBlocks: Int
    /// Where the first damage starts, in bytes of the file; null when none was found.
    @AlwaysPresent var damageOffset: UInt64?
    /// What was wrong there; null when nothing was.
    @AlwaysPresent var damage: String?
    /// The limit that stopped the salvage short of the archive's end (the bytes were sound);
    /// null when none did.
    @AlwaysPresent var stopped: String?

    init(_ report: SalvageReport, archive: String, directory: String, whole: Bool) {
        self.archive = archive
        self.directory = directory
        self.whole = whole
        recovered = report.recovered
        lost = report.lost
        lostIsComplete = report.lostIsComplete
        goodBlocks = report.goodBlocks
        damagedBlocks = report.damagedBlocks
        damageOffset = report.damageOffset
        damage = report.damage
        stopped = report.stop
    }
}
