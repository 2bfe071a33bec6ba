import Synchronization

/// A one-way flag that a Swift task sets when it is cancelled and that code running on one of our
/// own threads polls between slices of work, where `Task.isCancelled` cannot be asked.
package final class CancellationFlag: Sendable {
    private let state = Atomic<Bool>(false)

    package init() {}

    package func cancel() { state.store(true, ordering: .releasing) }

    package var isCancelled: Bool { state.load(ordering: .acquiring) }
}
