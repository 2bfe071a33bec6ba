import Synchronization

/// The first error of the compress-and-write pipeline, where the producer can see it: the producer
/// is blocked in a channel send when the consumer fails, and learns why once the send returns.
final class PipelineStatus: Sendable {
    private let failure = Mutex<(any Error)?>(nil)

    func fail(_ error: any Error) {
        failure.withLock { if $0 == nil { $0 = error } }
    }

    var error: (any Error)? { failure.withLock { $0 } }
}
