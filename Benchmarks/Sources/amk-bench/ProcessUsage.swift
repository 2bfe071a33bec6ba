/// What one child process (with everything it waited for) cost: the figures of one measured run.
struct ProcessUsage: Codable, Sendable {
    /// Wall-clock seconds from spawn to reaping.
    var wallSeconds: Double
    /// User CPU seconds of the child and of the children it reaped (a pipeline's every stage).
    var userSeconds: Double
    /// System CPU seconds, likewise.
    var systemSeconds: Double
    /// Peak resident set of the largest single process in the run, in bytes (a maximum over the
    /// processes, not a sum: for `tar | xz` that is xz). See ``ChildProcess`` for how.
    var peakRSSBytes: Int
    /// The exit status, or 128 + the signal number when the child was killed.
    var exitStatus: Int32

    /// User plus system seconds.
    var cpuSeconds: Double { userSeconds + systemSeconds }
}
