/// One piece of work that the ``Watchdog`` times on its own: a compression, a read, a write.
///
/// Stage-level heartbeats cannot catch one stuck job while a sibling of the same stage makes
/// progress: with two compressors, the healthy one would keep the stage alive forever. A job has
/// its own deadline, counted from its start or its own last ``Watchdog/beat(_:)-(WatchdogJob)``,
/// and a stall report names it.
public struct WatchdogJob: Sendable, Hashable {
    let id: UInt64
    /// The stage it belongs to, whose timeout applies.
    public let stage: PipelineStage
}
