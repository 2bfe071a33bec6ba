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

        typealias Received = (next: State.Receive, resume: String?)

        static func piece(_ received: Received) -> (Int, String?)? {
            if case .piece(let piece) = received.next { return (piece, received.resume) }
            return nil
        }

        static func isPark(_ received: Received) -> Bool {
            if case .park = received.next { return true }
            return false
        }

        static func isEnd(_ received: Received) -> Bool {
            if case .end = received.next { return true }
            return false
        }

        static func isFailed(_ received: Received) -> Bool {
            if case .failed = received.next { return true }
            return false
        }

        static func suspended(_ send: State.Send) -> String?? {
            if case .suspended(let wake) = send { return .some(wake) }
            return .none
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

        @Test func aFullHandOffHoldsTheSenderWithItsPieceUntilThereIsRoom() throws {
            var state = State(capacity: 2)
            _ = state.send(1, sender: "S")
            _ = state.send(2, sender: "S")
            #expect(Self.suspended(state.send(3, sender: "S")) == .some(nil), "a full hand-off holds the sender")
            #expect(state.isHoldingSender)
            #expect(state.queued == 2, "the held piece waits with its sender")
            let first = try #require(Self.piece(state.receive(parking: "R")))
            #expect(first.0 == 1)
            #expect(first.1 == nil, "piece 1 in the receiver's hands and piece 2 waiting: still no room")
            let second = try #require(Self.piece(state.receive(parking: "R")))
            #expect(second.0 == 2)
            #expect(second.1 == "S", "done with piece 1: piece 3 takes its room and the sender goes on")
            #expect(!state.isHoldingSender)
            #expect(state.queued == 1)
            #expect(try #require(Self.piece(state.receive(parking: "R"))).0 == 3)
        }

        @Test func thePieceInTheReceiversHandsCountsAgainstTheCapacity() throws {
            var state = State(capacity: 1)
            #expect(Self.queued(state.send(1, sender: "S")) == .some(nil))
            #expect(try #require(Self.piece(state.receive(parking: "R"))).0 == 1)
            #expect(Self.suspended(state.send(2, sender: "S")) == .some(nil), "one piece being consumed fills a capacity of one")
            // Asking again says the receiver is done with piece 1: the held piece comes straight
            // to it, and its sender goes on.
            let second = try #require(Self.piece(state.receive(parking: "R")))
            #expect(second.0 == 2)
            #expect(second.1 == "S")
            #expect(state.queued == 0)
            #expect(Self.isPark(state.receive(parking: "R")))
            #expect(Self.queued(state.send(3, sender: "S")) == .some("R"), "a parked receiver holds nothing: room again")
        }

        @Test func withNoCapacityASendReturnsOnceTheReceiverIsDoneWithItsPiece() throws {
            var state = State(capacity: 0)
            #expect(Self.isPark(state.receive(parking: "R")))
            #expect(Self.suspended(state.send(1, sender: "S")) == .some("R"), "the parked receiver is woken to take it")
            let first = try #require(Self.piece(state.receive(parking: "R")))
            #expect(first.0 == 1)
            #expect(first.1 == nil, "taken, not yet done: the sender still waits")
            #expect(state.isHoldingSender)
            let next = state.receive(parking: "R")
            #expect(next.resume == "S", "done with piece 1: the sender goes on")
            #expect(Self.isPark(next))
            #expect(!state.isHoldingSender)
            #expect(Self.suspended(state.send(2, sender: "S")) == .some("R"))
            #expect(try #require(Self.piece(state.receive(parking: "R"))).0 == 2)
            #expect(state.finish() == nil)
            let end = state.receive(parking: "R")
            #expect(end.resume == "S", "the last piece's sender is resumed along with the end")
            #expect(Self.isEnd(end))
        }

        @Test func withNoCapacityTheReceiverStoppingReleasesTheSenderItWasWorkingFor() throws {
            var state = State(capacity: 0)
            _ = state.send(1, sender: "S")
            #expect(try #require(Self.piece(state.receive(parking: "R"))).0 == 1)
            #expect(state.close() == "S")
            #expect(!state.isHoldingSender)

            var cancelled = State(capacity: 0)
            _ = cancelled.send(1, sender: "S")
            _ = cancelled.receive(parking: "R")
            #expect(cancelled.cancelSender() == "S", "a cancelled sender does not wait for the receiver")
            #expect(cancelled.receive(parking: "R").resume == nil, "and is resumed only once")
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
