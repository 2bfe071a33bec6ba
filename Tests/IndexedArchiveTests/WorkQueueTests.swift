import Testing

@testable import IndexedArchive

extension EngineSuites {
    /// The worker pool's bookkeeping as a value: each transition and what it tells the pool to do.
    @Suite struct WorkQueueTests {
        typealias Queue = WorkQueue<Int, String>

        static func taken(_ next: Queue.Next) -> Int? {
            if case .run(let job) = next { return job }
            return nil
        }

        static func parked(_ next: Queue.Next) -> Bool {
            if case .park = next { return true }
            return false
        }

        /// The exit waiters an `.exit` hands over, or nil for another answer.
        static func exited(_ next: Queue.Next) -> [String]? {
            if case .exit(let waiters) = next { return waiters }
            return nil
        }

        @Test func jobsRunInTheOrderTheyCame() {
            var queue = Queue(threads: 2)
            let wokeForFirst = queue.submit(1)
            let wokeForSecond = queue.submit(2)
            #expect(wokeForFirst == nil, "no thread is parked: nothing to wake")
            #expect(wokeForSecond == nil)
            let aAsks = queue.next(parking: "A")
            #expect(Self.taken(aAsks) == 1)
            let bAsks = queue.next(parking: "B")
            #expect(Self.taken(bAsks) == 2)
            #expect(queue.running == 2)
            queue.finished()
            #expect(queue.running == 1)
            #expect(queue.queued == 0)
        }

        @Test func aThreadWithNothingToDoParksAndASubmitWakesIt() {
            var queue = Queue(threads: 1)
            let aAsks = queue.next(parking: "A")
            #expect(Self.parked(aAsks))
            #expect(queue.waiting == 1)
            let wake = queue.submit(7)
            #expect(wake == "A", "A is parked: wake it")
            #expect(queue.waiting == 0, "a thread is woken once")
            let wakeAgain = queue.submit(8)
            #expect(wakeAgain == nil, "nobody else to wake")
            let aAsksAgain = queue.next(parking: "A")
            #expect(Self.taken(aAsksAgain) == 7)
            let aAsksLast = queue.next(parking: "A")
            #expect(Self.taken(aAsksLast) == 8)
        }

        @Test func theLatestThreadToParkIsWokenFirst() {
            var queue = Queue(threads: 3)
            for thread in ["A", "B", "C"] {
                let answer = queue.next(parking: thread)
                #expect(Self.parked(answer))
            }
            let firstWake = queue.submit(1)
            #expect(firstWake == "C")
            let secondWake = queue.submit(2)
            #expect(secondWake == "B")
            #expect(queue.waiting == 1)
        }

        @Test func shutdownLetsQueuedJobsRunThenEveryThreadExits() {
            var queue = Queue(threads: 2)
            let aAsks = queue.next(parking: "A")
            #expect(Self.parked(aAsks), "thread A parks")
            let bAsks = queue.next(parking: "B")
            #expect(Self.parked(bAsks), "thread B parks")
            let mustWait = queue.awaitExit("waiter")
            #expect(mustWait, "the threads still run: wait for them")
            let wakeForJob = queue.submit(1)
            let wakeForShutdown = queue.shutdown()
            #expect(wakeForJob == "B")
            #expect(wakeForShutdown == ["A"], "the parked thread must be woken to see it")
            let bAsksAgain = queue.next(parking: "B")
            #expect(Self.taken(bAsksAgain) == 1, "a job queued before the shutdown still runs")
            let aAsksAgain = queue.next(parking: "A")
            #expect(Self.exited(aAsksAgain) == [], "nothing left for A: it leaves, and it is not the last")
            #expect(!queue.allExited, "B still runs its job")
            queue.finished()
            let bAsksLast = queue.next(parking: "B")
            #expect(Self.exited(bAsksLast) == ["waiter"], "the last to leave wakes the exit waiter")
            #expect(queue.allExited)
            #expect(queue.exited == 2)
            #expect(queue.waiting == 0 && queue.running == 0)
            let mustWaitLate = queue.awaitExit("late")
            #expect(!mustWaitLate, "all gone: nothing to wait for")
        }

        @Test func aShutdownWithNoThreadParkedWakesNobody() {
            var queue = Queue(threads: 1)
            let wakeForShutdown = queue.shutdown()
            #expect(wakeForShutdown.isEmpty)
            let aAsks = queue.next(parking: "A")
            #expect(Self.exited(aAsks) == [])
        }

        /// Spent slots are let go as jobs are taken (a job's closure may hold a 16 MiB chunk), and
        /// the order holds across the compactions.
        @Test func theQueueKeepsItsOrderAcrossCompactions() {
            var queue = Queue(threads: 1)
            var taken: [Int] = []
            for job in 0..<1000 {
                _ = queue.submit(job)
                if job % 3 == 0, let next = Self.taken(queue.next(parking: "A")) { taken.append(next) }
            }
            while queue.queued > 0, let next = Self.taken(queue.next(parking: "A")) { taken.append(next) }
            #expect(taken == Array(0..<1000))
        }
    }
}
