/// The bookkeeping of a ``HandOff`` as a value: the pieces waiting, the sender suspended for room,
/// the receiver parked for a piece, and how the hand-off ended. Each transition returns what the
/// caller must do (resume whom, wake whom) after unlocking, as ``WorkQueue`` does for the pool;
/// the tests drive it directly.
///
/// `Sender` is what resumes a suspended sender (a continuation in the hand-off, a name in the
/// tests), `Waker` what wakes the parked receiver. One of each is held at most: one task sends, one
/// thread receives.
struct HandOffState<Element, Sender, Waker> {
    /// How the hand-off ended, if it has.
    enum Ending: Equatable {
        /// The sender has sent everything: the receiver takes what is left, then sees the end.
        case finished
        /// The sender failed or was cancelled: what is left is dropped.
        case failed
        /// The receiver stopped taking pieces: sends fail from now on.
        case closed
    }

    /// What a send does.
    enum Send {
        /// The piece is queued; wake the parked receiver, if given.
        case queued(wake: Waker?)
        /// No room: the sender is held, with its piece, until there is room for it (or, with no
        /// capacity, until the receiver is done with it). Wake the parked receiver, if given: it
        /// takes a held piece when nothing else waits.
        case suspended(wake: Waker?)
        /// The receiver is gone: the piece is dropped and the send fails.
        case closed
        /// The sender was cancelled: the piece is dropped and the send fails.
        case cancelled
    }

    /// What a receive gives.
    enum Receive {
        /// The oldest piece.
        case piece(Element)
        /// Nothing yet: the receiver's waker is parked; wait for it, then ask again.
        case park
        /// The sender finished and every piece has been taken.
        case end
        /// The sender failed, or the receiver closed: stop.
        case failed
    }

    /// Pieces that may be waiting or in the receiver's hands before a sender is held. Zero makes
    /// each send a rendezvous: it returns once the receiver is done with the piece, so that the
    /// sender is never ahead of the receiver (as if it had done the receiver's work itself).
    let capacity: Int
    private var pieces: [Element] = []
    /// Whether the receiver holds a piece it took: asking for the next one says it is done.
    private var receiving = false
    private var held: (piece: Element, sender: Sender)?
    /// With no capacity: the sender whose piece the receiver holds, resumed when it is done.
    private var awaitingDone: Sender?
    private var parked: Waker?
    private var senderCancelled = false
    private(set) var ending: Ending?

    init(capacity: Int) {
        precondition(capacity >= 0, "a hand-off's capacity cannot be negative")
        self.capacity = capacity
    }

    /// Pieces queued and not yet taken (a held sender's piece not counted).
    var queued: Int { pieces.count }

    /// Whether a sender is held: for room, or for the receiver to be done with its piece.
    var isHoldingSender: Bool { held != nil || awaitingDone != nil }

    /// The sender offers `piece`, to be resumed through `sender` if it must wait.
    mutating func send(_ piece: Element, sender: Sender) -> Send {
        if let ending { return ending == .closed ? .closed : .cancelled }
        if senderCancelled { return .cancelled }
        precondition(held == nil && awaitingDone == nil, "one sender at a time")
        defer { parked = nil }
        guard pieces.count + (receiving ? 1 : 0) < capacity else {
            held = (piece, sender)
            return .suspended(wake: parked)
        }
        pieces.append(piece)
        return .queued(wake: parked)
    }

    /// The receiver, whose waker is `waker`, is done with the piece it took, if any, and asks for
    /// the next one; `resume` is a sender to resume now, if any. A held sender's piece goes straight
    /// to the receiver when nothing else waits: the receiver need not wait for the sender to run
    /// again.
    mutating func receive(parking waker: Waker) -> (next: Receive, resume: Sender?) {
        receiving = false
        let done = awaitingDone
        awaitingDone = nil
        if ending == .failed || ending == .closed { return (.failed, done) }
        if !pieces.isEmpty {
            let piece = pieces.removeFirst()
            receiving = true
            guard let (waiting, sender) = held, pieces.count + 1 < capacity else { return (.piece(piece), done) }
            held = nil
            pieces.append(waiting)
            return (.piece(piece), sender)
        }
        if let (piece, sender) = held {
            held = nil
            receiving = true
            guard capacity > 0 else {
                awaitingDone = sender
                return (.piece(piece), done)
            }
            return (.piece(piece), sender)
        }
        if ending == .finished { return (.end, done) }
        parked = waker
        return (.park, done)
    }

    /// The sender has nothing more to send; returns the parked receiver's waker, to wake.
    mutating func finish() -> Waker? {
        guard ending == nil else { return nil }
        ending = .finished
        defer { parked = nil }
        return parked
    }

    /// The sender failed: pieces left are dropped; returns the parked receiver's waker, to wake.
    mutating func fail() -> Waker? {
        guard ending == nil || ending == .finished else { return nil }
        ending = .failed
        pieces.removeAll()
        defer { parked = nil }
        return parked
    }

    /// The receiver stops: pieces left are dropped; returns a held sender, to resume with a failure.
    mutating func close() -> Sender? {
        if ending == nil || ending == .finished { ending = .closed }
        pieces.removeAll()
        receiving = false
        defer {
            held = nil
            awaitingDone = nil
        }
        return held?.sender ?? awaitingDone
    }

    /// The sending task was cancelled: returns a held sender, to resume with `CancellationError`;
    /// a send that comes later fails at once.
    mutating func cancelSender() -> Sender? {
        senderCancelled = true
        defer {
            held = nil
            awaitingDone = nil
        }
        return held?.sender ?? awaitingDone
    }
}
