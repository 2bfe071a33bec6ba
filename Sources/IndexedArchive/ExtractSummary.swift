/// What an extraction did.
public struct ExtractSummary: Sendable {
    /// Members written.
    public var entries: Int
    /// Content bytes written.
    public var bytes: UInt64
    /// Members skipped (devices, FIFOs) or written differently (set-id bits dropped), with why.
    public var warnings: [ExtractWarning]
    /// Wall-clock time of the extraction.
    public var seconds: Double

    /// For callers that extract otherwise (a stream, ``ArchiveStreamReader``) and report alike.
    public init(entries: Int, bytes: UInt64, warnings: [ExtractWarning], seconds: Double) {
        self.entries = entries
        self.bytes = bytes
        self.warnings = warnings
        self.seconds = seconds
    }
}
