import Testing

@testable import IndexedArchive

extension EngineSuites {
    /// What a supervised call answers, for each way its operation can end: the verdict is a pure
    /// function of the result, the cancellation, the point of no return and the stall.
    @Suite struct SupervisionTests {
        struct Failure: Error {}
        static let stall = StallReport(stage: .read, silentFor: .seconds(2), timeout: .seconds(1))

        static func verdict(
            _ result: Result<Int, any Error>, cancelled: Bool, committed: Bool = false, stall: StallReport? = nil
        ) -> Result<Int, any Error> {
            Supervision<Int>.verdict(result, cancelled: cancelled, committed: committed, stall: stall)
        }

        static func code(_ result: Result<Int, any Error>) -> ArchiveError.Code? {
            if case .failure(let error) = result { return (error as? ArchiveError)?.code }
            return nil
        }

        static func message(_ result: Result<Int, any Error>) -> String {
            if case .failure(let error) = result { return (error as? ArchiveError)?.message ?? "\(error)" }
            return ""
        }

        @Test func withoutCancellationTheResultStands() throws {
            #expect(try Self.verdict(.success(1), cancelled: false, stall: Self.stall).get() == 1)
            let failed = Self.verdict(.failure(Failure()), cancelled: false, stall: Self.stall)
            #expect(throws: Failure.self) { try failed.get() }
        }

        @Test func aSuccessAfterACancellationIgnoredItUnlessCommitted() throws {
            let ignored = Self.verdict(.success(1), cancelled: true)
            #expect(Self.code(ignored) == .terminated)
            #expect(Self.message(ignored) == "terminated: cancellation ignored: returned normally after being cancelled")

            let afterStall = Self.verdict(.success(1), cancelled: true, stall: Self.stall)
            #expect(Self.code(afterStall) == .terminated)
            #expect(Self.message(afterStall) == "terminated: \(Self.stall); cancelled, it returned as if it had not been")

            #expect(try Self.verdict(.success(1), cancelled: true, committed: true, stall: Self.stall).get() == 1, "the work was done")
        }

        @Test func aFailureAfterAStallIsTheStall() {
            for error in [CancellationError() as any Error, Failure(), ArchiveError(.io(errno: 5), "read: EIO")] {
                let verdict = Self.verdict(.failure(error), cancelled: true, stall: Self.stall)
                #expect(Self.code(verdict) == .stalled, "\(error)")
                #expect(Self.message(verdict) == Self.stall.description)
            }
        }

        @Test func theOperationsOwnVerdictStands() {
            let stalled = ArchiveError(.stalled, "stalled: an extension's own report")
            #expect(
                Self.message(Self.verdict(.failure(stalled), cancelled: true, stall: Self.stall)) == "stalled: an extension's own report")
            let killed = ArchiveError(.terminated, "terminated: the host killed its process group")
            #expect(Self.message(Self.verdict(.failure(killed), cancelled: true, stall: Self.stall)) == killed.message)
        }

        @Test func theCallersCancellationWithoutAStallStaysACancellation() {
            let verdict = Self.verdict(.failure(CancellationError()), cancelled: true)
            #expect(throws: CancellationError.self) { try verdict.get() }
        }
    }
}
