import Foundation
import Testing

@testable import IndexedArchive

extension EngineSuites {
    /// The watchdog's ladder as a value, driven with instants chosen by the test: no clock, no
    /// thread, no sleeping.
    @Suite struct WatchdogStateTests {
        static let start = ContinuousClock.now
        static func at(_ milliseconds: Int) -> ContinuousClock.Instant { start + .milliseconds(milliseconds) }
        static let policy = WatchdogPolicy(
            stallTimeouts: [.read: .milliseconds(100)], defaultStallTimeout: .milliseconds(500),
            gracePeriod: .milliseconds(200))

        @Test func aStageWithWorkStallsAfterItsOwnTimeout() {
            var state = WatchdogState()
            state.begin(.read, at: Self.at(0))
            #expect(state.check(at: Self.at(99), policy: Self.policy) == nil)
            state.beat(.read, at: Self.at(90))
            #expect(state.check(at: Self.at(189), policy: Self.policy) == nil, "a beat restarts the silence")
            let stall = state.check(at: Self.at(190), policy: Self.policy)
            #expect(stall == StallReport(stage: .read, silentFor: .milliseconds(100), timeout: .milliseconds(100)))
            #expect(state.check(at: Self.at(5000), policy: Self.policy) == stall, "the first stall is kept")
        }

        /// The monitor looking a minute late means the process was stopped (Ctrl-Z, then `fg`):
        /// that minute is nobody's silence, and the stage has its whole timeout from the resume.
        /// A stage silent across ordinary looks still stalls.
        @Test func timeTheProcessWasSuspendedIsNotSilence() {
            var state = WatchdogState()
            state.begin(.read, at: Self.at(0))
            #expect(state.look(at: Self.at(50), policy: Self.policy, answered: false) == .wait)
            // Stopped for 65 s: the read's 100 ms timeout would have passed 650 times over.
            #expect(state.look(at: Self.at(65_050), policy: Self.policy, answered: false) == .wait)
            #expect(state.look(at: Self.at(65_080), policy: Self.policy, answered: false) == .wait)
            guard case .cancel(let stall) = state.look(at: Self.at(65_150), policy: Self.policy, answered: false) else {
                Issue.record("the stage did not stall after its timeout from the resume")
                return
            }
            #expect(stall.stage == .read)
        }

        @Test func aStageWithoutWorkNeverStalls() {
            var state = WatchdogState()
            state.begin(.compress, at: Self.at(0))
            state.end(.compress, at: Self.at(10))
            // Waiting for a free compressor is backpressure, not a stall.
            #expect(state.check(at: Self.at(60_000), policy: Self.policy) == nil)
            state.begin(.compress, at: Self.at(60_000))
            #expect(state.check(at: Self.at(60_499), policy: Self.policy) == nil, "silence counts from the new work")
            #expect(state.check(at: Self.at(60_500), policy: Self.policy)?.stage == .compress)
        }

        @Test func ofTwoStagesStalledAtOnceTheEarlierInThePipelineIsNamed() {
            var state = WatchdogState()
            state.begin(.write, at: Self.at(0))
            state.begin(PipelineStage(rawValue: "caller"), at: Self.at(0))
            state.begin(.compress, at: Self.at(0))
            #expect(state.check(at: Self.at(1000), policy: Self.policy)?.stage == .compress)
        }

        @Test func theJobSilentLongestPastItsDeadlineIsNamed() {
            var state = WatchdogState()
            let healthy = state.beginJob(.compress, label: "block 1", at: Self.at(0))
            _ = state.beginJob(.compress, label: "block 2", at: Self.at(0))
            _ = state.beginJob(.read, label: "a.txt", at: Self.at(350))
            for beat in stride(from: 100, through: 600, by: 100) { state.beat(healthy, at: Self.at(beat)) }
            // block 2 is 100 ms past its 500 ms, a.txt 150 ms past its 100 ms.
            let stall = state.check(at: Self.at(600), policy: Self.policy)
            #expect(stall?.job == "a.txt")
            #expect(stall?.silentFor == .milliseconds(250))

            var ended = WatchdogState()
            let job = ended.beginJob(.write, label: "w", at: Self.at(0))
            ended.end(job)
            #expect(ended.check(at: Self.at(10_000), policy: Self.policy) == nil, "an ended job is not timed")
        }

        @Test func theLadderWaitsCancelsThenTerminatesAfterTheGracePeriod() {
            var state = WatchdogState()
            state.begin(.read, at: Self.at(0))
            #expect(state.look(at: Self.at(50), policy: Self.policy, answered: false) == .wait)
            guard case .cancel(let stall) = state.look(at: Self.at(100), policy: Self.policy, answered: false) else {
                Issue.record("a stall is cancelled")
                return
            }
            #expect(stall.stage == .read)
            #expect(state.cancelledAt == Self.at(100))
            let committed = state.commit()
            #expect(!committed, "no point of no return once cancelled")
            #expect(state.look(at: Self.at(299), policy: Self.policy, answered: false) == .wait, "within the grace period")
            #expect(
                state.look(at: Self.at(300), policy: Self.policy, answered: false)
                    == .terminate("\(stall); cancelled, it did not stop within 200 ms"))
        }

        @Test func theCallersCancellationRunsTheSameGracePeriod() {
            var state = WatchdogState()
            state.cancel(at: Self.at(10))
            state.cancel(at: Self.at(150))
            #expect(state.cancelledAt == Self.at(10), "the first cancellation counts")
            #expect(state.look(at: Self.at(209), policy: Self.policy, answered: false) == .wait)
            #expect(
                state.look(at: Self.at(210), policy: Self.policy, answered: false) == .terminate("cancelled, it did not stop within 200 ms")
            )
        }

        @Test func theMonitorStopsOnceTheWorkFinishesOrTheCallerIsAnswered() {
            var finished = WatchdogState()
            finished.begin(.read, at: Self.at(0))
            finished.finish()
            #expect(finished.look(at: Self.at(10_000), policy: Self.policy, answered: false) == .stop)

            var answered = WatchdogState()
            answered.cancel(at: Self.at(0))
            #expect(answered.look(at: Self.at(10_000), policy: Self.policy, answered: true) == .stop)
        }

        @Test func aCommitBeforeAnyCancellationHolds() {
            var state = WatchdogState()
            let committed = state.commit()
            #expect(committed)
            #expect(state.committed)
            state.cancel(at: Self.at(5))
            #expect(state.committed, "a later cancellation does not undo the point of no return")
        }
    }
}
