/// What an extraction did.
public struct ExtractSummary: Sendable {
    /// Members written.
    public var entries: Int
    /// Content bytes written.
    public var bytes: UInt64
    /// Members skipped (devices, FIFOs) or written differently (set-id bits dropped), with why:
    /// the first ``ExtractSummary/keptWarnings``; ``warningCount`` counts them all.
    public var warnings: [ExtractWarning]
    /// How many warnings there were.
    public var warningCount = 0
    /// Wall-clock time of the extraction.
    public var seconds: Double
    /// Members not extracted, with why (only with ``ExtractOptions/continuesAfterMemberFailures``):
    /// the first ``ExtractSummary/keptFailures`` of them; ``failedMembers`` counts them all.
    public var failures: [ArchiveError] = []
    /// How many members were not extracted.
    public var failedMembers = 0
    /// The names of the selection (``ExtractOptions/members`` or ``ExtractOptions/selection``)
    /// that selected no member, once each, in the order given; empty without a selection.
    /// `amk extract` names each as `no such member` and exits 1, as GNU tar does.
    public var unmatchedMembers: [String] = []

    /// How many failures ``failures`` holds at most: an archive of a million refused names must
    /// not hold a million messages in memory.
    public static let keptFailures = 1_000
    /// How many warnings ``warnings`` holds at most: a 280 KB archive of 100,000 FIFOs with long
    /// names held half a gigabyte of warnings until the extraction ended.
    public static let keptWarnings = 1_000

    /// For callers that extract otherwise (a stream, ``ArchiveStreamReader``) and report alike.
    public init(
        entries: Int, bytes: UInt64, warnings: [ExtractWarning], seconds: Double, failures: [ArchiveError] = [],
        failedMembers: Int = 0, warningCount: Int = 0
    ) {
        self.entries = entries
        self.bytes = bytes
        self.warnings = warnings
        self.warningCount = max(warningCount, warnings.count)
        self.seconds = seconds
        self.failures = failures
        self.failedMembers = max(failedMembers, failures.count)
    }
}
