/// What an extraction did.
public struct ExtractSummary: Sendable {
    /// Members written.
    public var entries: Int
    /// Content bytes written.
    public var bytes: UInt64
    /// Members skipped (devices, FIFOs), with why.
    public var warnings: [String]
    public var seconds: Double
}
