/// What an extraction did.
public struct ExtractSummary: Sendable {
    /// Members written.
    public var entries: Int
    /// Content bytes written.
    public var bytes: UInt64
    /// Members skipped (devices, FIFOs) or written differently (set-id bits dropped), with why.
    public var warnings: [ExtractWarning]
    public var seconds: Double
}
