import Testing

@testable import IndexedArchive

extension EngineSuites {
    /// The hand-off's bookkeeping as a value: each transition and what it tells the two sides.
    @Suite struct HandOffStateTests {
        typealias State = HandOffState<Int, String, String>

        static func queued(_ send: State.Send) -> String?? {
            if case .queued(let wake) = send { return .some(wake) }
            return .none
        }

        static func piece(_ receive: State.Receive) -> (Int, String?)? {
            if case .piece(let piece, let sender) = receive { return (piece, sender) }
            return nil
        }

        static func isPark(_ receive: State.Receive) -> Bool {
            if case .park = receive { return true }
            return false
        }

        static func isEnd(_ receive: State.Receive) -> Bool {
            if case .end = receive { return true }
            return false
        }

        static func isFailed(_ receive: State.Receive) -> Bool {
            if case .failed = receive { return true }
            return false
        }

        @Test func piecesComeInOrderAndAnEmptyHandOffParksTheReceiver() throws {
            var state = State(capacity: 2)
            #expect(Self.queued(state.send(1, sender: "S")) == .some(nil), "nobody parked: nothing to wake")
            #expect(Self.queued(state.send(2, sender: "S")) == .some(nil))
            #expect(state.queued == 2)
            #expect(try #require(Self.piece(state.receive(parking: "R"))).0 == 1)
            #expect(try #require(Self.piece(state.receive(parking: "R"))).0 == 2)
            #expect(Self.isPark(state.receive(parking: "R")))
            #expect(Self.queued(state.send(3, sender: "S")) == .some("R"), "the parked receiver is woken for it")
            #expect(Self.queued(state.send(4, sender: "S")) == .some(nil), "and only once")
            #expect(try #require(Self.piece(state.receive(parking: "R"))).0 == 3)
        }

        @Test func aFullHandOffHoldsTheSenderWithItsPieceUntilOneIsTaken() throws {
            var state = State(capacity: 1)
            #expect(Self.queued(state.send(1, sender: "S")) != nil)
            guard case .suspended = state.send(2, sender: "S") else {
                Issue.record("a full hand-off must hold the sender")
                return
            }
            #expect(state.isHoldingSender)
            #expect(state.queued == 1, "the held piece waits with its sender")
            let first = try #require(Self.piece(state.receive(parking: "R")))
            #expect(first.0 == 1)
            #expect(first.1 == "S", "its piece took the room: the sender goes on")
            #expect(!state.isHoldingSender)
            #expect(state.queued == 1)
            let second = try #require(Self.piece(state.receive(parking: "R")))
            #expect(second.0 == 2)
            #expect(second.1 == nil)
        }

        @Test func afterFinishTheReceiverTakesWhatIsLeftThenSeesTheEnd() throws {
            var state = State(capacity: 2)
            _ = state.send(1, sender: "S")
            #expect(state.finish() == nil, "the receiver is not parked")
            #expect(try #require(Self.piece(state.receive(parking: "R"))).0 == 1)
            #expect(Self.isEnd(state.receive(parking: "R")))
            #expect(Self.isEnd(state.receive(parking: "R")), "and keeps seeing it")

            var parked = State(capacity: 2)
            #expect(Self.isPark(parked.receive(parking: "R")))
            #expect(parked.finish() == "R", "a parked receiver is woken to see the end")
            #expect(Self.isEnd(parked.receive(parking: "R")))
        }

        @Test func aFailureDropsWhatIsLeftAndStopsTheReceiver() {
            var state = State(capacity: 2)
            _ = state.send(1, sender: "S")
            #expect(state.fail() == nil)
            #expect(state.queued == 0, "pieces after a failure are never consumed")
            #expect(Self.isFailed(state.receive(parking: "R")))

            var parked = State(capacity: 2)
            _ = parked.receive(parking: "R")
            #expect(parked.fail() == "R")
            #expect(Self.isFailed(parked.receive(parking: "R")))
        }

        @Test func aClosedHandOffReleasesAHeldSenderAndRefusesLaterSends() {
            var state = State(capacity: 1)
            _ = state.send(1, sender: "S")
            _ = state.send(2, sender: "S")
            #expect(state.close() == "S", "the held sender must not wait for a receiver that has gone")
            #expect(!state.isHoldingSender)
            #expect(state.queued == 0)
            guard case .closed = state.send(3, sender: "S") else {
                Issue.record("a send after close must fail")
                return
            }
            #expect(state.finish() == nil)
            #expect(state.ending == .closed, "the receiver's close is not undone by the sender's finish")
            #expect(state.close() == nil, "closing twice releases nobody twice")
        }

        @Test func aCancelledSenderIsReleasedAndItsLaterSendsFail() throws {
            var state = State(capacity: 1)
            _ = state.send(1, sender: "S")
            _ = state.send(2, sender: "S")
            #expect(state.cancelSender() == "S")
            let first = try #require(Self.piece(state.receive(parking: "R")))
            #expect(first.0 == 1)
            #expect(first.1 == nil, "the cancelled sender was resumed already")
            #expect(Self.isPark(state.receive(parking: "R")), "its held piece was dropped")
            guard case .cancelled = state.send(3, sender: "S") else {
                Issue.record("a cancelled sender's next send must fail")
                return
            }

            // Cancelled before it ever waited: nothing to release, and the next send fails.
            var early = State(capacity: 1)
            #expect(early.cancelSender() == nil)
            guard case .cancelled = early.send(1, sender: "S") else {
                Issue.record("a send after the cancellation must fail")
                return
            }
        }

        @Test func theReceiverStoppingAfterTheSenderFinishedEndsTheHandOffClosed() {
            var state = State(capacity: 2)
            _ = state.send(1, sender: "S")
            _ = state.finish()
            #expect(state.close() == nil)
            #expect(state.ending == .closed)
            #expect(state.fail() == nil, "a failure after the close changes nothing")
            #expect(state.ending == .closed)
        }
    }
}
