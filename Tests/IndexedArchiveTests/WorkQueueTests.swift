import Testing

@testable import IndexedArchive

extension EngineSuites {
    /// The worker pool's bookkeeping as a value: each transition and what it tells the pool to do.
    @Suite struct WorkQueueTests {
        static func taken(_ next: WorkQueue<Int>.Next) -> Int? {
            if case .run(let job) = next { return job }
            return nil
        }

        static func isWait(_ next: WorkQueue<Int>.Next) -> Bool {
            if case .wait = next { return true }
            return false
        }

        static func isExit(_ next: WorkQueue<Int>.Next) -> Bool {
            if case .exit = next { return true }
            return false
        }

        @Test func jobsRunInTheOrderTheyCame() {
            var queue = WorkQueue<Int>(threads: 2)
            let wokeForFirst = queue.submit(1)
            let wokeForSecond = queue.submit(2)
            #expect(!wokeForFirst, "no thread is waiting: nothing to wake")
            #expect(!wokeForSecond)
            #expect(Self.taken(queue.next()) == 1)
            #expect(Self.taken(queue.next()) == 2)
            #expect(queue.running == 2)
            queue.finished()
            #expect(queue.running == 1)
            #expect(queue.queued == 0)
        }

        @Test func aThreadWithNothingToDoWaitsAndASubmitWakesIt() {
            var queue = WorkQueue<Int>(threads: 1)
            #expect(Self.isWait(queue.next()))
            #expect(queue.waiting == 1)
            let wake = queue.submit(7)
            #expect(wake, "a thread waits: wake it")
            queue.woke()
            #expect(queue.waiting == 0)
            #expect(Self.taken(queue.next()) == 7)
        }

        @Test func shutdownLetsQueuedJobsRunThenEveryThreadExits() {
            var queue = WorkQueue<Int>(threads: 2)
            #expect(Self.isWait(queue.next()), "thread A waits")
            #expect(Self.isWait(queue.next()), "thread B waits")
            let wakeForJob = queue.submit(1)
            let wakeForShutdown = queue.shutdown()
            #expect(wakeForJob)
            #expect(wakeForShutdown, "the waiting threads must be woken to see it")
            queue.woke()
            #expect(Self.taken(queue.next()) == 1, "a job queued before the shutdown still runs")
            queue.woke()
            #expect(Self.isExit(queue.next()), "nothing left for B: it leaves")
            #expect(!queue.allExited, "A still runs its job")
            queue.finished()
            #expect(Self.isExit(queue.next()))
            #expect(queue.allExited)
            #expect(queue.exited == 2)
            #expect(queue.waiting == 0 && queue.running == 0)
        }

        @Test func aShutdownWithNoThreadWaitingWakesNobody() {
            var queue = WorkQueue<Int>(threads: 1)
            let wake = queue.shutdown()
            #expect(!wake)
            #expect(Self.isExit(queue.next()))
        }

        /// Spent slots are let go as jobs are taken (a job's closure may hold a 16 MiB chunk), and
        /// the order holds across the compactions.
        @Test func theQueueKeepsItsOrderAcrossCompactions() {
            var queue = WorkQueue<Int>(threads: 1)
            var taken: [Int] = []
            for job in 0..<1000 {
                _ = queue.submit(job)
                if job % 3 == 0, let next = Self.taken(queue.next()) { taken.append(next) }
            }
            while queue.queued > 0, let next = Self.taken(queue.next()) { taken.append(next) }
            #expect(taken == Array(0..<1000))
        }
    }
}
