import Foundation
import Synchronization
import Testing

@testable import IndexedArchive

extension EngineSuites {
    /// The report that feeds `amk pack`'s bar and ``PackOptions/progress``: what it shows and when.
    @Suite struct ProgressReportTests {
        /// `show` hears of each change of the shown count once, and of nothing else.
        @Test func showIsCalledOnlyWhenTheShownCountChanges() {
            let shown = Mutex<[UInt64]>([])
            let report = ProgressReport(chunkSize: 1000) { count in shown.withLock { $0.append(count) } }
            report.stored(600)
            report.stored(900)  // 1500 stored, nothing written: nothing to show
            report.blockWritten(sequence: 0)  // 1000
            report.blockWritten(sequence: 0)  // the same again: no change
            report.blockWritten(sequence: 3)  // 1500, all that is stored
            report.stored(0)
            report.stored(100)  // 1600
            #expect(shown.withLock { $0 } == [1000, 1500, 1600])
        }

        /// From several threads at once, the counts arrive in the order they were made, never
        /// going back, and end at the total.
        @Test func countsFromManyThreadsNeverGoBack() async {
            let shown = Mutex<[UInt64]>([])
            let report = ProgressReport(chunkSize: 10) { count in shown.withLock { $0.append(count) } }
            report.blockWritten(sequence: 1_000_000)
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        for _ in 0..<1000 { report.stored(3) }
                    }
                }
            }
            let counts = shown.withLock { $0 }
            #expect(counts.count == 4000)
            #expect(zip(counts, counts.dropFirst()).allSatisfy { $0 < $1 })
            #expect(counts.last == 12_000)
        }

        /// A caller's `Progress` moves on from what it had completed before the pack.
        @Test func aProgressAdvancesFromWhatItHadCompleted() {
            let progress = Progress(totalUnitCount: 10_000)
            progress.completedUnitCount = 250
            let report = ProgressReport(progress, chunkSize: 1000)
            report.stored(1800)
            report.blockWritten(sequence: 0)
            #expect(progress.completedUnitCount == 1250)
            report.blockWritten(sequence: 1)
            #expect(progress.completedUnitCount == 2050)
        }

        /// A total below what is stored (an export's size estimate of 0 or 1,000 bytes for
        /// megabytes) holds what is done at the total: the fraction, also a parent's through a
        /// child, never passes 1 nor goes back, and ends at 1.
        @Test func aTotalBelowWhatIsStoredHoldsAtTheTotal() {
            let parent = Progress(totalUnitCount: 100)
            let progress = Progress(totalUnitCount: 1000)
            parent.addChild(progress, withPendingUnitCount: 100)
            let report = ProgressReport(progress, chunkSize: 1000)
            var fractions: [Double] = []
            for sequence in 0..<6 {
                report.stored(1000)
                report.blockWritten(sequence: sequence)
                fractions.append(parent.fractionCompleted)
            }
            #expect(progress.completedUnitCount == 1000 && progress.totalUnitCount == 1000)
            #expect(zip(fractions, fractions.dropFirst()).allSatisfy { $0 <= $1 }, "never back: \(fractions)")
            #expect(fractions.allSatisfy { $0 <= 1 } && fractions.last == 1, "\(fractions)")
        }

        /// An export's case that killed the host: an estimate of 1 byte, a 3-byte file and a 1 GiB
        /// one, shown 8 MiB a block through a child of the caller's progress. Raising the child's
        /// total with each block overflowed Foundation's fraction arithmetic, which traps.
        @Test func aGrowingExportUnderATinyEstimateDoesNotTrap() {
            let parent = Progress(totalUnitCount: 1)
            let progress = Progress(totalUnitCount: 1)
            parent.addChild(progress, withPendingUnitCount: 1)
            let chunk = 8 << 20
            let report = ProgressReport(progress, chunkSize: chunk)
            report.stored(3)
            report.stored(1 << 30)
            for sequence in 0...(1 << 30) / chunk { report.blockWritten(sequence: sequence) }
            #expect(progress.completedUnitCount == 1 && progress.totalUnitCount == 1)
            #expect(parent.fractionCompleted == 1)
        }
    }
}
