import Foundation
import IndexedArchive
import TestSupport
import Testing

extension StressTests {
    /// A cancellation that races the end of a pack: the caller gets either the archive or a
    /// `CancellationError` with nothing at the destination, never an error beside a complete archive.
    @Suite struct LateCancellation {
        @Test func cancellationRacingTheEndOfAPackIsSuccessOrNothing() async throws {
            let runs = max(24, StressSettings.runs / 5)
            let scratch = try TemporaryDirectory(prefix: "amk-stress-late")
            let tree = try SourceTree.make(
                in: scratch.path, name: "app", seed: 0x1A7E, largeFiles: [1_200_000],
                smallBytes: 600_000)
            var options = PackOptions()
            options.preset = 0
            options.chunkSize = 1 << 20
            let probe = try scratch.subdirectory("probe") + "/out.tar.xz"
            let last = try await ArchivePacker.pack([tree.source], to: .file(probe), options: options).blocks - 1
            var tally: [String: Int] = [:]
            var starved = 0
            _ = try await PoolLagProbe.waitUntilQuiet()
            for index in 0..<runs {
                let seed = StressSettings.seed(forRun: index)
                var rng = SeededGenerator(seed: seed ^ 0x1A7E_0E7D)
                var context = RunContext(index: index, seed: seed, scenario: "cancel racing the end of a pack")
                let runDirectory = try scratch.subdirectory("run-\(index)")
                let destination = runDirectory + "/out.tar.xz"
                let cancel = CancelSwitch()
                // From the last data block's write, across the index blocks, the fsync and the rename.
                let delay = Duration.microseconds(Int.random(in: 0...20_000, using: &rng))
                var runOptions = options
                runOptions.stallPolicy = rng.chance(0.2) ? nil : WatchdogPolicy()
                runOptions.onEvent = { event in
                    if case .blockWritten(let sequence, _) = event, sequence == last { cancel.fire(after: delay) }
                }
                let packOptions = runOptions
                let result = await runPack(cancel: cancel) {
                    try await ArchivePacker.pack([tree.source], to: .file(destination), options: packOptions)
                }
                context.poolLag = result.poolLag
                tally[result.outcome.label, default: 0] += 1
                if context.starved { starved += 1 }
                switch result.outcome {
                case _ where context.starvedTermination(result.outcome):
                    break
                case .success:
                    if await Aftermath.contents(of: destination, extractTo: runDirectory + "/x", context) == nil { break }
                case .cancelled:
                    break
                default:
                    context.fail(
                        "cancelled \(delay.formatted) after the last block was written: \(result.outcome.detail)"
                            + (fileExists(destination) ? ", and a complete archive is at the destination" : ""))
                }
                try await Aftermath.check(
                    context, injector: nil, scratch: scratch.path, destination: destination,
                    succeeded: result.outcome.isSuccess)
                try? FileManager.default.removeItem(atPath: runDirectory)
            }
            print(
                "STRESS: late-cancel runs=\(runs) " + tally.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: " ")
                    + " pool-starved=\(starved)")
            #expect(PoolLagProbe.tolerated(starved, of: runs), "the cooperative pool was starved in \(starved) of \(runs) runs")
        }

        @Test func successPastThePointOfNoReturnIsReportedAsSuccess() async throws {
            let cancel = CancelSwitch()
            let task = Task {
                try await Watchdog.supervise(policy: WatchdogPolicy()) { watchdog in
                    #expect(watchdog.commit())
                    cancel.fire()
                    // Committed work finishes what it started.
                    while !Task.isCancelled { await Task.yield() }
                    return 7
                }
            }
            cancel.arm { task.cancel() }
            #expect(try await task.value == 7)
        }

        @Test func commitAfterCancellationIsRefused() async throws {
            let cancel = CancelSwitch()
            let task = Task {
                try await Watchdog.supervise(policy: WatchdogPolicy()) { watchdog in
                    cancel.fire()
                    while !Task.isCancelled { await Task.yield() }
                    guard watchdog.commit() else { throw CancellationError() }
                    return 7
                }
            }
            cancel.arm { task.cancel() }
            await #expect(throws: CancellationError.self) { try await task.value }
        }

        @Test func returningNormallyAfterCallerCancellationIsStillTerminated() async throws {
            let cancel = CancelSwitch()
            let task = Task {
                try await Watchdog.supervise(policy: WatchdogPolicy()) { _ in
                    cancel.fire()
                    while !Task.isCancelled { await Task.yield() }
                    return 7  // ignores the cancellation without having committed
                }
            }
            cancel.arm { task.cancel() }
            let error = await #expect(throws: ArchiveError.self) { try await task.value }
            #expect(error?.code == .terminated)
        }
    }
}
