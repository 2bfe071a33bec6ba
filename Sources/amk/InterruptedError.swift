/// The user asked the tool to stop: SIGINT (Ctrl-C), SIGTERM or SIGHUP arrived while it worked.
///
/// Thrown by ``SignalCancellation`` in place of the work's result, after the work has been
/// cancelled and has cleaned up; the root command reports it as `amk: interrupted`.
struct InterruptedError: Error, CustomStringConvertible {
    /// The signal that arrived.
    var signal: Int32

    var description: String { "interrupted" }
}
