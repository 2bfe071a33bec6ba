import Foundation

/// What the ``Watchdog`` saw when it declared a stall.
public struct StallReport: Sendable, Hashable, CustomStringConvertible {
    /// The stage that had work and made no progress.
    public var stage: PipelineStage
    /// How long it had been silent.
    public var silentFor: Duration
    /// Its stall timeout.
    public var timeout: Duration

    public var description: String {
        "stalled: stage '\(stage)' made no progress for \(Self.format(silentFor)) (timeout \(Self.format(timeout)))"
    }

    static func format(_ duration: Duration) -> String {
        let seconds = duration.secondsValue
        return seconds < 1 ? "\(Int((seconds * 1000).rounded())) ms" : String(format: "%.1f s", seconds)
    }
}
