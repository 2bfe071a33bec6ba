import Dispatch
import Synchronization

/// Pieces handed from one task to one thread of our own, in order, with a bounded number waiting.
///
/// A reading's ``TarConsumer`` lives on one I/O thread, inside one job, for the whole reading: the
/// parser, the extractor and the files it writes are touched by that thread alone. The task that
/// decodes (or reads a pipe) sends it the pieces through this hand-off: the sender suspends
/// without holding a thread when `capacity` pieces are waiting or being consumed (with no
/// capacity, until the receiver is done with its piece), and the receiving thread parks on a
/// semaphore when none waits. Only the hand-off's own bookkeeping (``HandOffState``) is shared,
/// in a Mutex.
///
/// Each side ends it once: the sender with ``finish()`` or ``fail()``, the receiver with
/// ``close()``, so that neither waits for a partner that has gone.
final class HandOff<Element: Sendable>: Sendable {
    /// Thrown to the sender when the receiver has stopped taking pieces: the receiver's own
    /// outcome says why.
    struct ReceiverGone: Error {}

    /// Thrown to the receiver when the sender failed: the sender's own error says why.
    struct SenderFailed: Error {}

    private typealias State = HandOffState<Element, CheckedContinuation<Void, any Error>, DispatchSemaphore>
    private let state: Mutex<State>
    /// The receiving thread's semaphore: one thread receives, so one is enough, and a signal given
    /// before it waits is kept.
    private let wakeUp = DispatchSemaphore(value: 0)

    init(capacity: Int) {
        state = Mutex(State(capacity: capacity))
    }

    /// Queues `piece`, waiting for room when `capacity` pieces are waiting or being consumed (with
    /// no capacity, until the receiver is done with it). Throws ``ReceiverGone`` when the receiver
    /// has stopped, `CancellationError` when the task is cancelled.
    func send(_ piece: Element) async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                switch state.withLock({ $0.send(piece, sender: continuation) }) {
                case .queued(let wake):
                    wake?.signal()
                    continuation.resume()
                case .suspended(let wake):
                    wake?.signal()
                case .closed:
                    continuation.resume(throwing: ReceiverGone())
                case .cancelled:
                    continuation.resume(throwing: CancellationError())
                }
            }
        } onCancel: {
            state.withLock { $0.cancelSender() }?.resume(throwing: CancellationError())
        }
    }

    /// The next piece, blocking the calling thread (one of our own, never the cooperative pool's)
    /// until one comes; nil once the sender has finished and every piece has been taken. Throws
    /// ``SenderFailed`` when the sender failed.
    func receive() throws -> Element? {
        while true {
            let (next, sender) = state.withLock { $0.receive(parking: wakeUp) }
            sender?.resume()
            switch next {
            case .piece(let piece):
                return piece
            case .park:
                wakeUp.wait()
            case .end:
                return nil
            case .failed:
                throw SenderFailed()
            }
        }
    }

    /// The sender has sent everything.
    func finish() {
        state.withLock { $0.finish() }?.signal()
    }

    /// The sender failed or was cancelled: the receiver stops at its next ``receive()``.
    func fail() {
        state.withLock { $0.fail() }?.signal()
    }

    /// The receiver stops taking pieces: a waiting or later send throws ``ReceiverGone``.
    func close() {
        state.withLock { $0.close() }?.resume(throwing: ReceiverGone())
    }
}
