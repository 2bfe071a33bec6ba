import Foundation

/// What the ``Watchdog`` saw when it declared a stall.
public struct StallReport: Sendable, Hashable, CustomStringConvertible {
    /// The stage that had work and made no progress.
    public var stage: PipelineStage
    /// The job that stalled ("block 12", a file's path), when the stage's work is timed per job.
    public var job: String?
    /// How long it had been silent.
    public var silentFor: Duration
    /// Its stall timeout.
    public var timeout: Duration

    /// A report that `stage` (and `job`, if given) was silent for `silentFor` against `timeout`.
    public init(stage: PipelineStage, job: String? = nil, silentFor: Duration, timeout: Duration) {
        self.stage = stage
        self.job = job
        self.silentFor = silentFor
        self.timeout = timeout
    }

    /// `stalled: stage 'compress' (block 2) made no progress for 512 ms (timeout 500 ms)`.
    public var description: String {
        let what = job.map { " (\($0))" } ?? ""
        return "stalled: stage '\(stage)'\(what) made no progress for \(Self.format(silentFor)) (timeout \(Self.format(timeout)))"
    }

    package static func format(_ duration: Duration) -> String {
        let seconds = duration.secondsValue
        return seconds < 1 ? "\(Int((seconds * 1000).rounded())) ms" : String(format: "%.1f s", seconds)
    }
}
