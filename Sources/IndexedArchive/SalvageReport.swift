/// What ``ArchiveSalvager`` recovered from a damaged archive.
public struct SalvageReport: Sendable {
    /// Members written whole, every byte from a block whose check verified.
    public var recovered: [String]
    /// Members known to be lost: from the index when it could still be read, otherwise the member
    /// that was cut by the damage; and hard links that could not be made because the archive does
    /// not hold their target before them, damage or not.
    public var lost: [String]
    /// Whether ``lost`` is the complete list (the index could be read), or only the member the
    /// damage cut, with an unknown number after it.
    public var lostIsComplete: Bool
    /// Blocks that decoded and verified.
    public var goodBlocks: Int
    /// Damaged blocks the salvage skipped, resuming at the next block header (it can when the
    /// damaged block's header still gives its sizes and the index gives member offsets).
    public var damagedBlocks: Int
    /// Where in the file the damage starts, or `nil` if every block verified.
    public var damageOffset: UInt64?
    /// What was wrong there.
    public var damage: String?
    /// Why the salvage stopped although the bytes were sound, if it did: a limit of
    /// ``ExtractOptions`` (``ExtractOptions/maxBytes``, ``ExtractOptions/maxEntries``) was
    /// reached, or the extraction refused a member (a path that would leave the destination).
    /// The member it stopped in is in ``lost``, with those after it when the index names them.
    public var stop: String? = nil
    /// Whether a block walked carries no integrity check (xz check type None, which `xz
    /// --check=none` writes): damage to its content could not be found, so "no damage" says
    /// less for it.
    public var isUnchecked = false
}
