import Foundation
import Synchronization
import Testing

@testable import IndexedArchive

/// A reading's state kept in one job, fed through a hand-off, and the way each side's failure ends
/// the other.
@Suite struct ConsumerJobTests {
    struct Failure: Error, Equatable { var name: String }

    /// The job's state: what it consumed, and on which thread.
    struct Tally {
        var pieces: [Int] = []
        var threads: Set<String> = []
    }

    /// What `abandon` saw: the pieces consumed and the error that ended the job.
    final class Abandoned: Sendable {
        let seen = Mutex<(pieces: [Int], error: String)?>(nil)
    }

    static func thread() -> String {
        (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
    }

    static func run(
        pieces: Int, capacity: Int = 2, makeFails: Bool = false, failAt: Int? = nil,
        producerFailsAfter: Int? = nil, abandoned: Abandoned = Abandoned()
    ) async throws -> (pieces: [Int], threads: Set<String>) {
        let pool = WorkerThreadPool(threads: 1, name: "test-consumer")
        defer { pool.shutdown() }
        return try await ConsumerJob.run(
            on: pool, capacity: capacity,
            making: { () throws -> Tally in
                if makeFails { throw Failure(name: "make") }
                return Tally()
            },
            consume: { (tally: inout Tally, piece: Int) in
                if piece == failAt { throw Failure(name: "consume") }
                tally.pieces.append(piece)
                tally.threads.insert(Self.thread())
            },
            finish: { tally in (tally.pieces, tally.threads) },
            abandon: { tally, error in
                abandoned.seen.withLock { $0 = (tally.pieces, String(describing: type(of: error))) }
                return error
            }
        ) { handOff in
            for piece in 0..<pieces {
                if piece == producerFailsAfter { throw Failure(name: "producer") }
                try await handOff.send(piece)
            }
        }
    }

    @Test func everyPieceIsConsumedInOrderOnTheJobsOneThread() async throws {
        let result = try await Self.run(pieces: 500)
        #expect(result.pieces == Array(0..<500))
        #expect(result.threads == ["test-consumer-0"], "the state never leaves its thread")
    }

    /// The default: each send returns once the job is done with its piece, so the producer
    /// holds nothing more than when each piece was a job of its own.
    @Test func byDefaultTheProducerIsNeverAheadOfTheJob() async throws {
        let pool = WorkerThreadPool(threads: 1, name: "test-consumer")
        defer { pool.shutdown() }
        let consumed = Atomic<Int>(0)
        let ahead = Atomic<Int>(0)
        let count = try await ConsumerJob.run(
            on: pool,
            making: { 0 },
            consume: { (count: inout Int, _: Int) in
                usleep(200)  // A slow consumer, such as one writing files.
                count += 1
                consumed.store(count, ordering: .sequentiallyConsistent)
            },
            finish: { count in count },
            abandon: { _, error in error }
        ) { handOff in
            for piece in 0..<200 {
                try await handOff.send(piece)
                if consumed.load(ordering: .sequentiallyConsistent) != piece + 1 { ahead.add(1, ordering: .relaxed) }
            }
        }
        #expect(count == 200)
        #expect(ahead.load(ordering: .relaxed) == 0, "a send returned before its piece was consumed")
    }

    @Test func theJobsErrorIsThrownAndTheProducerStops() async throws {
        let abandoned = Abandoned()
        let error = await #expect(throws: Failure.self) {
            try await Self.run(pieces: 100_000, capacity: 1, failAt: 5, abandoned: abandoned)
        }
        #expect(error == Failure(name: "consume"), "not the producer's ReceiverGone")
        let seen = try #require(abandoned.seen.withLock { $0 })
        #expect(seen.pieces == [0, 1, 2, 3, 4], "abandoned with what it had consumed")
        #expect(seen.error == "Failure")
    }

    @Test func theProducersErrorIsThrownAndTheJobAbandons() async throws {
        let abandoned = Abandoned()
        let error = await #expect(throws: Failure.self) {
            try await Self.run(pieces: 100, producerFailsAfter: 10, abandoned: abandoned)
        }
        #expect(error == Failure(name: "producer"))
        let seen = try #require(abandoned.seen.withLock { $0 }, "the job must learn that no more pieces come")
        // The producer's own error, not only that it failed: what the job abandons depends on
        // why (damage removes what unverified bytes made, a cancellation keeps it).
        #expect(seen.error == "Failure")
        #expect(seen.pieces.count <= 10)
    }

    @Test func aStateThatCannotBeMadeFailsTheRunWithoutWaitingForTheProducer() async throws {
        let abandoned = Abandoned()
        let error = await #expect(throws: Failure.self) {
            try await Self.run(pieces: 100_000, capacity: 1, makeFails: true, abandoned: abandoned)
        }
        #expect(error == Failure(name: "make"))
        #expect(abandoned.seen.withLock { $0 } == nil, "there was no state to abandon")
    }

    @Test func cancellingTheReadingEndsBothSides() async throws {
        let abandoned = Abandoned()
        let pool = WorkerThreadPool(threads: 1, name: "test-consumer")
        defer { pool.shutdown() }
        let started = Atomic<Bool>(false)
        let reading = Task {
            try await ConsumerJob.run(
                on: pool, capacity: 1,
                making: { [Int]() },
                consume: { (seen: inout [Int], piece: Int) in
                    seen.append(piece)
                    started.store(true, ordering: .sequentiallyConsistent)
                },
                finish: { seen in seen.count },
                abandon: { seen, error in
                    abandoned.seen.withLock { $0 = (seen, String(describing: type(of: error))) }
                    return error
                }
            ) { handOff in
                var piece = 0
                while true {  // Sends for ever: only the cancellation ends it.
                    try await handOff.send(piece)
                    piece += 1
                }
            }
        }
        while !started.load(ordering: .sequentiallyConsistent) { try await Task.sleep(for: .milliseconds(1)) }
        reading.cancel()
        await #expect(throws: CancellationError.self) { try await reading.value }
        #expect(abandoned.seen.withLock { $0 } != nil, "the job abandoned its state")
    }
}
