/// How long each stage may go without progress before the ``Watchdog`` cancels the work, and how
/// long cancelled work has to stop before it is abandoned.
public struct WatchdogPolicy: Sendable {
    /// Per-stage stall timeouts; stages not listed use ``defaultStallTimeout``.
    public var stallTimeouts: [PipelineStage: Duration]
    /// The stall timeout of stages not in ``stallTimeouts``.
    public var defaultStallTimeout: Duration
    /// After cancelling, how long to wait for the work to return before answering the caller with
    /// a `terminated` error and leaving the work behind.
    public var gracePeriod: Duration
    /// How often the monitor looks; by default a tenth of the shortest timeout, within 5–250 ms.
    public var checkInterval: Duration?

    /// Defaults sized for real disks and preset 9: a stage must be silent for a long while before
    /// it counts as stuck. Compression reports progress every 32 KiB of input, so even the slowest
    /// preset beats many times a second.
    public init(
        stallTimeouts: [PipelineStage: Duration] = [:], defaultStallTimeout: Duration = .seconds(60),
        gracePeriod: Duration = .seconds(2), checkInterval: Duration? = nil
    ) {
        self.stallTimeouts = stallTimeouts
        self.defaultStallTimeout = defaultStallTimeout
        self.gracePeriod = gracePeriod
        self.checkInterval = checkInterval
    }

    /// The same timeout for every stage.
    public static func uniform(_ timeout: Duration, gracePeriod: Duration = .seconds(2)) -> WatchdogPolicy {
        WatchdogPolicy(defaultStallTimeout: timeout, gracePeriod: gracePeriod)
    }

    /// The stall timeout of `stage`.
    public func timeout(for stage: PipelineStage) -> Duration {
        stallTimeouts[stage] ?? defaultStallTimeout
    }

    var interval: Duration {
        if let checkInterval { return checkInterval }
        let shortest = (PipelineStage.engineStages + stallTimeouts.keys).map(timeout(for:)).min() ?? defaultStallTimeout
        return min(max(shortest / 10, .milliseconds(5)), .milliseconds(250))
    }
}
