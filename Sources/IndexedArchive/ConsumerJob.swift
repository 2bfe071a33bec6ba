import Synchronization

/// A reading's state (its ``TarConsumer``, and for a stream the decoder in front of it) kept in one
/// job on a thread of our own for the whole reading, and fed there by a task through a
/// ``HandOff``.
///
/// The state is made, fed, finished or abandoned by that job alone, so it needs no lock and never
/// crosses a thread: what the reading learns comes back as the job's Sendable result, or its error.
/// A failure on either side ends the other: the sender's failure stops the job (which abandons the
/// member it was writing), and the job's failure makes the next send throw, so that neither waits
/// for a partner that has gone.
enum ConsumerJob {
    /// Runs `make`, then `consume` for each piece `produce` sends, then `finish`, in one job on
    /// `io`; `abandon` receives the state and the error when anything fails, and returns the
    /// error to throw. The sender's own error wins over the job's unless it only says that the job
    /// stopped first (then the job's error is the answer).
    ///
    /// Memory: at most `capacity` pieces are waiting or being consumed, and one more is held with
    /// its sender until there is room. With the default, no capacity, each send returns once the
    /// job is done with its piece: the producer is never ahead of the consumer, and a reading holds
    /// no more than when each piece was a job of its own (a decoded block ahead is 8 MiB of
    /// memory, and bought no measurable speed on a full extraction).
    static func run<State, Piece: Sendable, R: Sendable>(
        on io: WorkerThreadPool, capacity: Int = 0,
        making make: @escaping @Sendable () throws -> State,
        consume: @escaping @Sendable (inout State, Piece) throws -> Void,
        finish: @escaping @Sendable (inout State) throws -> R,
        abandon: @escaping @Sendable (inout State, any Error) -> any Error,
        produce: (HandOff<Piece>) async throws -> Void
    ) async throws -> R {
        let handOff = HandOff<Piece>(capacity: capacity)
        // Why the sender failed, for `abandon`: the job itself only learns that it did, and what
        // it abandons depends on why (damage removes what unverified bytes made; a cancellation
        // keeps it).
        let senderFailure = Mutex<(any Error)?>(nil)
        async let outcome = io.run { flag in
            var state: State
            do {
                state = try make()
            } catch {
                handOff.close()
                throw error
            }
            do {
                while let piece = try handOff.receive() {
                    if flag.isCancelled { throw CancellationError() }
                    try consume(&state, piece)
                }
                return try finish(&state)
            } catch {
                handOff.close()
                let cause = error is HandOff<Piece>.SenderFailed ? senderFailure.withLock { $0 } ?? error : error
                throw abandon(&state, cause)
            }
        }
        var produced: Result<Void, any Error> = .success(())
        do {
            try await produce(handOff)
            handOff.finish()
        } catch {
            produced = .failure(error)
            senderFailure.withLock { $0 = error }
            handOff.fail()
        }
        let result: Result<R, any Error>
        do {
            result = .success(try await outcome)
        } catch {
            result = .failure(error)
        }
        if case .failure(let error) = produced, !(error is HandOff<Piece>.ReceiverGone) { throw error }
        return try result.get()
    }
}
