/// One contender in a phase: its label, the shell command for a run, and how to judge the run.
struct Tool {
    /// The label in tables and in the JSON.
    var name: String
    /// The shell command for a run; the argument is the member for one-member extraction.
    var command: (String?) -> String
    /// The input size for MiB/s and ratio (nil: not a throughput measure). Asked after the run,
    /// as it is measured during the session.
    var inputBytes: () -> Int? = { nil }
    /// Runs before each measurement, untimed: clears the output of the previous run.
    var prepare: () throws -> Void = {}
    /// Runs after each measurement, untimed: returns the bytes written (for pack) or throws a
    /// `BenchError` saying what is wrong with the output.
    var check: (String?) throws -> Int? = { _ in nil }
    /// Why the tool cannot run at all (not installed, not implemented yet): shown instead of figures.
    var unavailable: String?
}

extension Tool {
    /// The same tool, marked unavailable for `reason` when there is one.
    func markedUnavailable(_ reason: String?) -> Tool {
        var copy = self
        if let reason { copy.unavailable = reason }
        return copy
    }
}
