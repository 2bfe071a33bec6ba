import Foundation
import Synchronization
import Testing

@testable import IndexedArchive

/// Pieces from a task to a thread of our own: order, room, and each side's way out.
@Suite struct HandOffTests {
    @Test func piecesReachTheThreadInOrderWithAtMostCapacityWaiting() async throws {
        let pool = WorkerThreadPool(threads: 1, name: "test-handoff")
        defer { pool.shutdown() }
        let handOff = HandOff<Int>(capacity: 2)
        let sent = Atomic<Int>(0)
        let mostAhead = Atomic<Int>(0)
        async let received = pool.run { _ -> [Int] in
            var got: [Int] = []
            while let piece = try handOff.receive() {
                got.append(piece)
                // Sent but not yet taken: what waits, plus the sender's held piece at most.
                let ahead = sent.load(ordering: .sequentiallyConsistent) - got.count
                if ahead > mostAhead.load(ordering: .relaxed) { mostAhead.store(ahead, ordering: .relaxed) }
                if got.count % 100 == 0 { usleep(1000) }
            }
            return got
        }
        for piece in 0..<1000 {
            try await handOff.send(piece)
            sent.add(1, ordering: .sequentiallyConsistent)
        }
        handOff.finish()
        #expect(try await received == Array(0..<1000))
        #expect(mostAhead.load(ordering: .relaxed) <= 2, "the sender never runs more than the capacity ahead")
    }

    @Test func aSenderWaitingForRoomIsReleasedWhenTheReceiverStops() async throws {
        let pool = WorkerThreadPool(threads: 1, name: "test-handoff")
        defer { pool.shutdown() }
        let handOff = HandOff<Int>(capacity: 1)
        async let taken = pool.run { _ -> Int? in
            let first = try handOff.receive()
            handOff.close()
            return first
        }
        await #expect(throws: HandOff<Int>.ReceiverGone.self) {
            for piece in 0..<100 { try await handOff.send(piece) }
        }
        #expect(try await taken == 0)
    }

    @Test func aWaitingSenderSeesItsTasksCancellation() async throws {
        let handOff = HandOff<Int>(capacity: 1)
        let waiting = Task {
            try await handOff.send(1)
            try await handOff.send(2)  // No room and nobody receiving: waits until cancelled.
        }
        try await Task.sleep(for: .milliseconds(50))
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        await #expect(throws: CancellationError.self, "a cancelled sender's later sends fail at once") {
            try await handOff.send(3)
        }
    }

    @Test func aParkedReceiverStopsWhenTheSenderFails() async throws {
        let pool = WorkerThreadPool(threads: 1, name: "test-handoff")
        defer { pool.shutdown() }
        let handOff = HandOff<Int>(capacity: 1)
        let parked = Atomic<Bool>(false)
        let outcome = Task {
            try await pool.run { _ -> Int? in
                parked.store(true, ordering: .sequentiallyConsistent)
                return try handOff.receive()
            }
        }
        while !parked.load(ordering: .sequentiallyConsistent) { try await Task.sleep(for: .milliseconds(1)) }
        try await Task.sleep(for: .milliseconds(20))
        handOff.fail()
        await #expect(throws: HandOff<Int>.SenderFailed.self) { try await outcome.value }
    }

    @Test func afterFinishTheReceiverDrainsThenSeesTheEnd() async throws {
        let pool = WorkerThreadPool(threads: 1, name: "test-handoff")
        defer { pool.shutdown() }
        let handOff = HandOff<String>(capacity: 4)
        for word in ["a", "b", "c"] { try await handOff.send(word) }
        handOff.finish()
        let words = try await pool.run { _ -> [String] in
            var got: [String] = []
            while let word = try handOff.receive() { got.append(word) }
            return got
        }
        #expect(words == ["a", "b", "c"])
    }
}
