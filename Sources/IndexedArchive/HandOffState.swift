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
        /// No room: the sender is held, with its piece, until the receiver makes room.
        case suspended
        /// The receiver is gone: the piece is dropped and the send fails.
        case closed
        /// The sender was cancelled: the piece is dropped and the send fails.
        case cancelled
    }

    /// What a receive gives.
    enum Receive {
        /// The oldest piece; resume the sender, whose piece took the room this one left, if given.
        case piece(Element, resume: Sender?)
        /// Nothing yet: the receiver's waker is parked; wait for it, then ask again.
        case park
        /// The sender finished and every piece has been taken.
        case end
        /// The sender failed: stop.
        case failed
    }

    /// Pieces that may wait before a sender is held.
    let capacity: Int
    private var pieces: [Element] = []
    private var held: (piece: Element, sender: Sender)?
    private var parked: Waker?
    private var senderCancelled = false
    private(set) var ending: Ending?

    init(capacity: Int) {
        precondition(capacity > 0, "a hand-off needs room for one piece")
        self.capacity = capacity
    }

    /// Pieces queued and not yet taken (a held sender's piece not counted).
    var queued: Int { pieces.count }

    /// Whether a sender is held for room.
    var isHoldingSender: Bool { held != nil }

    /// The sender offers `piece`, to be resumed through `sender` if it must wait.
    mutating func send(_ piece: Element, sender: Sender) -> Send {
        if let ending { return ending == .closed ? .closed : .cancelled }
        if senderCancelled { return .cancelled }
        precondition(held == nil, "one sender at a time")
        guard pieces.count < capacity else {
            held = (piece, sender)
            return .suspended
        }
        pieces.append(piece)
        defer { parked = nil }
        return .queued(wake: parked)
    }

    /// The receiver, whose waker is `waker`, asks for the next piece.
    mutating func receive(parking waker: Waker) -> Receive {
        if ending == .failed || ending == .closed { return .failed }
        guard !pieces.isEmpty else {
            if ending == .finished { return .end }
            parked = waker
            return .park
        }
        let piece = pieces.removeFirst()
        guard let (waiting, sender) = held else { return .piece(piece, resume: nil) }
        held = nil
        pieces.append(waiting)
        return .piece(piece, resume: sender)
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
        defer { held = nil }
        return held?.sender
    }

    /// The sending task was cancelled: returns a held sender, to resume with `CancellationError`;
    /// a send that comes later fails at once.
    mutating func cancelSender() -> Sender? {
        senderCancelled = true
        defer { held = nil }
        return held?.sender
    }
}
