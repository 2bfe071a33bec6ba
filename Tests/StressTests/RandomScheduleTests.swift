import Foundation
import IndexedArchive
import Synchronization
import TestSupport
import Testing

extension StressTests {
    /// Seeded random schedules: each run packs a small tree while one thing goes wrong at a moment
    /// its seed chooses, and checks the outcome, the latency, and that nothing is left behind.
    @Suite struct RandomSchedules {
        /// The stall timeout of the runs that stall; stalls are drawn around it.
        static let stallTimeout: Duration = .milliseconds(400)
        static let gracePeriod: Duration = .seconds(1)
        /// Generous bounds for a loaded 2-core machine; the real targets are benchmarked elsewhere.
        static let cancelBound: Duration = .seconds(1)
        static let stallBound: Duration = stallTimeout + .seconds(1)

        /// What a run does; run `i` does `all[seed % count]`, so consecutive seeds cover them all.
        enum Scenario: String, CaseIterable {
            case clean
            case cancelBeforeStart, cancelMidEnumeration, cancelMidRead, cancelMidBlock, cancelWhileIndexWritten,
                cancelAfterFinish
            case readStall, enumerateStall, compressStall
            case compressFailure, ioError, shortReads
            case racingPacks

            static func forSeed(_ seed: UInt64) -> Scenario { allCases[Int(seed % UInt64(allCases.count))] }
        }

        /// Which outcomes a run may have.
        struct Expectation: CustomStringConvertible {
            var success = false
            var cancelled = false
            var stalledStage: String?
            var ioError: (errno: Int32, path: String)?
            var injected: Int?
            var changedPath: String?

            var description: String {
                var parts: [String] = []
                if success { parts.append("success") }
                if cancelled { parts.append("CancellationError") }
                if let stalledStage { parts.append("stalled in '\(stalledStage)'") }
                if let ioError { parts.append("io errno \(ioError.errno) naming \(ioError.path)") }
                if let injected { parts.append("the injected failure of block \(injected)") }
                if let changedPath { parts.append("changedWhileReading naming \(changedPath)") }
                return parts.joined(separator: " or ")
            }

            /// Whether `outcome` is one of these; if not, why.
            func judge(_ outcome: PackOutcome) -> String? {
                switch outcome {
                case .success where success, .cancelled where cancelled:
                    return nil
                case .injected(let fault) where injected == fault.sequence:
                    return nil
                case .archiveError(let error):
                    if let stalledStage, error.code == .stalled {
                        return error.message.contains("'\(stalledStage)'")
                            ? nil
                            : "the stall report does not name '\(stalledStage)': \(error.message)"
                    }
                    if let ioError, case .io(let code) = error.code, code == ioError.errno {
                        return error.path == ioError.path
                            ? nil
                            : "the I/O error names \(error.path ?? "no path"), not \(ioError.path): \(error)"
                    }
                    if let changedPath, error.code == .changedWhileReading {
                        return error.path == changedPath ? nil : "the error names \(error.path ?? "no path"), not \(changedPath)"
                    }
                    return "expected \(self), got \(outcome.detail)"
                default:
                    return "expected \(self), got \(outcome.detail)"
                }
            }
        }

        /// What one run did, for the tallies.
        struct Record {
            var scenario: Scenario
            var outcome: String
            var cancelLatency: Duration?
            var stallLatency: Duration?
            var poolLag: Duration = .zero
            var starved = false
        }

        /// The tree every run packs, and what a clean pack of it looks like.
        final class Workbench {
            let scratch: TemporaryDirectory
            let tree: SourceTree
            let expected: TreeContents
            let expectedDocs: TreeContents
            /// Calls and blocks of a clean pack: read calls, directory listings, data blocks.
            let reads: Int
            let listings: Int
            let blocks: Int

            private init(scratch: TemporaryDirectory, tree: SourceTree, reads: Int, listings: Int, blocks: Int) throws {
                self.scratch = scratch
                self.tree = tree
                self.expected = try TreeContents(tree.root)
                self.expectedDocs = try TreeContents(tree.root + "/docs")
                self.reads = reads
                self.listings = listings
                self.blocks = blocks
            }

            /// Makes the tree (about 3 MiB: two large files, about a hundred small ones) and packs it
            /// once, counting calls, to learn where faults can go.
            static func make() async throws -> Workbench {
                let scratch = try TemporaryDirectory(prefix: "amk-stress-schedule")
                let tree = try SourceTree.make(
                    in: scratch.path, name: "app", seed: 0xA11CE,
                    largeFiles: [1_500_000, 700_000], smallBytes: 1_000_000)
                let injector = FaultInjector()
                var options = PackOptions()
                options.preset = 0
                options.chunkSize = 1 << 20
                options.fileSystem = injector.fileSystem
                let destination = try scratch.subdirectory("profile") + "/out.tar.xz"
                let summary = try await ArchivePacker.pack([tree.source], to: .file(destination), options: options)
                try FileManager.default.removeItem(atPath: destination)
                return try Workbench(
                    scratch: scratch, tree: tree, reads: injector.count(.read),
                    listings: injector.count(.listDirectory), blocks: summary.blocks)
            }

            /// Slices of 1 MiB a large file is read in, plus the final probe read that sees the end.
            static func readCalls(forSize size: Int) -> Int {
                size <= SourceTree.smallFileLimit ? 1 : (size + (1 << 20) - 1) / (1 << 20) + 1
            }
        }

        @Test func randomSchedules() async throws {
            // The memory bounds below are the CLI's: the test process opts in to its allocator
            // setting as amk does (a library no longer makes that process-wide choice itself).
            AllocatorTuning.apply()
            _ = try await PoolLagProbe.waitUntilQuiet()
            let bench = try await Workbench.make()
            #expect(bench.blocks >= 3, "the tree should span several 1 MiB blocks, not \(bench.blocks)")
            #expect(bench.listings == bench.tree.directories.count)
            // Warm-up: lets the process open what it opens once (thread pools, caches) before the baseline.
            for index in 0..<3 {
                _ = try await Self.run(index: -1 - index, seed: 0, scenario: .clean, bench: bench)
            }
            var tracker = ResourceTracker()
            tracker.setBaseline(try await ResourceTracker.settledSample())
            let start = ContinuousClock.now
            var records: [Record] = []
            for index in 0..<StressSettings.runs {
                let seed = StressSettings.seed(forRun: index)
                records.append(try await Self.run(index: index, seed: seed, scenario: .forSeed(seed), bench: bench))
                tracker.record(try await ResourceTracker.settledSample())
            }
            let elapsed = ContinuousClock.now - start
            Self.report(records, elapsed: elapsed, tracker: tracker)
            let starved = records.filter(\.starved).count
            #expect(
                PoolLagProbe.tolerated(starved, of: records.count),
                "the cooperative pool was starved (lag >= \(PoolLagProbe.starvedLag.formatted)) in \(starved) of \(records.count) runs")
            try await Self.checkResources(tracker)
        }

        // MARK: - One run

        static func run(index: Int, seed: UInt64, scenario: Scenario, bench: Workbench) async throws -> Record {
            var rng = SeededGenerator(seed: seed)
            var context = RunContext(index: index, seed: seed, scenario: scenario.rawValue)
            let runDirectory = try bench.scratch.subdirectory("run-\(index)")
            defer { try? FileManager.default.removeItem(atPath: runDirectory) }
            let destination = runDirectory + "/out.tar.xz"
            if scenario == .racingPacks {
                return try await race(context, &rng, bench: bench, runDirectory: runDirectory, destination: destination)
            }

            var options = PackOptions()
            options.preset = Int.random(in: 0...1, using: &rng)
            options.chunkSize = 1 << 20
            options.workers = Int.random(in: 1...2, using: &rng)
            options.stallPolicy = rng.chance(0.25) ? nil : WatchdogPolicy()
            let cancel = CancelSwitch()
            var rules: [FaultRule] = []
            var compressionFault: CompressionFault?
            var expect = Expectation()
            var cancelBeforeStart = false
            var mustFire = true
            var stallDuration: Duration?? = nil  // set for the stall scenarios: .some(nil) is "for ever"

            func drawStall() -> Duration? {
                if rng.chance(0.25) { return nil }
                return .milliseconds(Int.random(in: 120...800, using: &rng))
            }
            func expectStall(_ stage: String, _ duration: Duration?) {
                options.stallPolicy = WatchdogPolicy(defaultStallTimeout: stallTimeout, gracePeriod: gracePeriod)
                stallDuration = .some(duration)
                if let duration, duration <= stallTimeout - .milliseconds(200) {
                    expect.success = true
                    return
                }
                expect.stalledStage = stage
                // Too close to the timeout to say which side a loaded machine lands on.
                if let duration, duration < stallTimeout + .milliseconds(150) { expect.success = true }
            }
            func randomReadTarget() -> (path: String, size: Int) {
                bench.tree.readFiles.randomElement(using: &rng)!
            }

            switch scenario {
            case .clean:
                expect.success = true
                mustFire = false
            case .cancelBeforeStart:
                cancelBeforeStart = true
                expect.cancelled = true
                mustFire = false
            case .cancelMidEnumeration:
                rules.append(
                    FaultRule(
                        call: .listDirectory, match: .nth(Int.random(in: 0..<bench.listings, using: &rng)),
                        action: .cancel(cancel, after: .zero)))
                expect.cancelled = true
            case .cancelMidRead:
                rules.append(
                    FaultRule(
                        call: .read, match: .nth(Int.random(in: 0..<bench.reads, using: &rng)),
                        action: .cancel(cancel, after: .zero)))
                expect.cancelled = true
            case .cancelMidBlock:
                let delay: Duration = rng.chance(0.5) ? .zero : rng.milliseconds(1...20)
                compressionFault = CompressionFault(
                    sequence: Int.random(in: 0..<bench.blocks, using: &rng),
                    action: .cancel(cancel, after: delay))
                expect.cancelled = true
                // Cancelled a little after the last block began, the pack may already be complete.
                expect.success = delay > .zero && compressionFault!.sequence >= bench.blocks - 2
            case .cancelWhileIndexWritten:
                let delay: Duration = rng.chance(0.3) ? .zero : .microseconds(Int.random(in: 1...15_000, using: &rng))
                let last = bench.blocks - 1
                options.onEvent = { event in
                    if case .blockWritten(let sequence, _) = event, sequence == last { cancel.fire(after: delay) }
                }
                // The cancellation races the end of the pack: either outcome is right, a third is not.
                expect.cancelled = true
                expect.success = true
                mustFire = false
            case .cancelAfterFinish:
                expect.success = true
                mustFire = false
            case .readStall:
                let call = [FileCall.open, .fstat, .read].randomElement(using: &rng)!
                let target = randomReadTarget()
                let nth = call == .read ? Int.random(in: 0..<Workbench.readCalls(forSize: target.size), using: &rng) : 0
                let duration = drawStall()
                rules.append(FaultRule(call: call, match: .path(target.path, nth: nth), action: .stall(duration)))
                expectStall("read", duration)
            case .enumerateStall:
                let (call, path) = randomEnumerationSite(&rng, tree: bench.tree)
                let duration = drawStall()
                rules.append(FaultRule(call: call, match: .path(path, nth: 0), action: .stall(duration)))
                expectStall("enumerate", duration)
            case .compressStall:
                // One compressing thread: with two, the other's progress would mask the stall for a while.
                options.workers = 1
                let duration = drawStall()
                compressionFault = CompressionFault(
                    sequence: Int.random(in: 0..<bench.blocks, using: &rng),
                    action: .stall(duration))
                expectStall("compress", duration)
            case .compressFailure:
                let sequence = Int.random(in: 0..<bench.blocks, using: &rng)
                compressionFault = CompressionFault(sequence: sequence, action: .fail)
                expect.injected = sequence
            case .ioError:
                let code = [EIO, EACCES, EPERM, ESTALE, EOVERFLOW].randomElement(using: &rng)!
                let call: FileCall
                let path: String
                let nth: Int
                if rng.chance(0.5) {
                    (call, path) = randomEnumerationSite(&rng, tree: bench.tree)
                    nth = 0
                } else {
                    call = [FileCall.open, .fstat, .read].randomElement(using: &rng)!
                    let target = randomReadTarget()
                    path = target.path
                    nth = call == .read ? Int.random(in: 0..<Workbench.readCalls(forSize: target.size), using: &rng) : 0
                }
                rules.append(FaultRule(call: call, match: .path(path, nth: nth), action: .fail(errno: code)))
                expect.ioError = (code, path)
            case .shortReads:
                let target = randomReadTarget()
                let small = target.size <= SourceTree.smallFileLimit
                let limit = small ? Int.random(in: 1024...65_536, using: &rng) : Int.random(in: 16_384...262_144, using: &rng)
                rules.append(FaultRule(call: .read, match: .every(target.path), action: .shortReads(max: limit)))
                // The seam's contract: a short read means the end of the file. A small file is read in
                // one call, so it looks shrunk; a large one is read until its size is reached.
                if small && limit < target.size {
                    expect.changedPath = target.path
                } else {
                    expect.success = true
                }
            case .racingPacks:
                preconditionFailure("handled above")
            }

            let injector = FaultInjector(rules: rules, compressionFault: compressionFault)
            options.fileSystem = injector.fileSystem
            options.compressionHook = injector.compressionHook
            let sources = [bench.tree.source]
            let packOptions = options
            let cancelFirst = cancelBeforeStart
            let result = await runPack(cancel: cancel) {
                if cancelFirst {
                    withUnsafeCurrentTask { $0?.cancel() }
                    cancel.fire()
                }
                return try await ArchivePacker.pack(sources, to: .file(destination), options: packOptions)
            }
            if scenario == .cancelAfterFinish {
                cancel.fire()
            }

            context.poolLag = result.poolLag
            var record = Record(scenario: scenario, outcome: result.outcome.label, poolLag: result.poolLag)
            record.starved = context.starved
            if case .hung = result.outcome {
                context.fail("the pack had not returned after 30 s")
            } else if context.starvedTermination(result.outcome) {
                record.outcome = "terminated(pool starved)"
            } else if let why = expect.judge(result.outcome) {
                context.fail(why)
            }
            if mustFire {
                context.check(injector.firedCount > 0, "the fault was never reached: the run tested nothing")
            }
            if case .cancelled = result.outcome {
                if let firedAt = cancel.firedAt {
                    let latency = result.returned - firedAt
                    if !context.starved { record.cancelLatency = latency }
                    context.check(context.starved || latency < cancelBound, "cancel-to-return took \(latency.formatted)")
                } else {
                    context.fail("CancellationError although nothing cancelled the pack")
                }
            }
            if let error = result.outcome.archiveError, error.code == .stalled {
                if let stalledAt = injector.stallStartedAt {
                    let latency = result.returned - stalledAt
                    if !context.starved { record.stallLatency = latency }
                    context.check(
                        context.starved || latency < stallBound,
                        "stall to return took \(latency.formatted) (timeout \(stallTimeout.formatted))")
                } else {
                    context.fail("reported a stall that was not injected: \(error)")
                }
            }
            if case .some(.some(let duration)) = stallDuration, result.outcome.isSuccess {
                context.check(
                    duration < stallTimeout + .milliseconds(150),
                    "a stall of \(duration.formatted) past the timeout of \(stallTimeout.formatted) went unnoticed")
            }
            if result.outcome.isSuccess {
                if let contents = await Aftermath.contents(of: destination, extractTo: runDirectory + "/x", context) {
                    let extracted = try TreeContents(runDirectory + "/x/app")
                    context.check(
                        contents.items.keys.allSatisfy { $0 == "app" || $0.hasPrefix("app/") },
                        "the archive holds more than the tree")
                    context.check(
                        extracted == bench.expected,
                        "the extracted tree differs from the source: \(extracted.differences(from: bench.expected))")
                }
                try? FileManager.default.removeItem(atPath: runDirectory + "/x")
            }
            try await Aftermath.check(
                context, injector: injector, scratch: bench.scratch.path, destination: destination,
                succeeded: result.outcome.isSuccess)
            return record
        }

        static func randomEnumerationSite(_ rng: inout SeededGenerator, tree: SourceTree) -> (FileCall, String) {
            switch Int.random(in: 0..<3, using: &rng) {
            case 0: return (.listDirectory, tree.directories.randomElement(using: &rng)!)
            case 1: return (.readlink, tree.symlinks.randomElement(using: &rng)!)
            default:
                let paths = tree.directories + tree.files.map(\.path) + tree.symlinks
                return (.lstat, paths.randomElement(using: &rng)!)
            }
        }

        /// Two packs of different sources race for one destination: both succeed, and what is left
        /// is one of the two, complete.
        static func race(
            _ context: RunContext, _ rng: inout SeededGenerator, bench: Workbench, runDirectory: String,
            destination: String
        ) async throws -> Record {
            func options(_ rng: inout SeededGenerator) -> PackOptions {
                var options = PackOptions()
                options.preset = Int.random(in: 0...1, using: &rng)
                options.chunkSize = 1 << 20
                options.workers = Int.random(in: 1...2, using: &rng)
                return options
            }
            let first = options(&rng)
            let second = options(&rng)
            let app = bench.tree.source
            let docs = PackSource(path: bench.tree.root + "/docs", archivePath: "docs")
            async let a = runPack { try await ArchivePacker.pack([app], to: .file(destination), options: first) }
            async let b = runPack { try await ArchivePacker.pack([docs], to: .file(destination), options: second) }
            let (resultA, resultB) = await (a, b)
            var context = context
            context.poolLag = max(resultA.poolLag, resultB.poolLag)
            context.check(resultA.outcome.isSuccess, "the first racing pack: \(resultA.outcome.detail)")
            context.check(resultB.outcome.isSuccess, "the second racing pack: \(resultB.outcome.detail)")
            if let contents = await Aftermath.contents(of: destination, extractTo: runDirectory + "/x", context) {
                let top = Set(contents.items.keys.filter { !$0.contains("/") })
                if top == ["app"] {
                    let extracted = try TreeContents(runDirectory + "/x/app")
                    context.check(
                        extracted == bench.expected, "the winner differs from its source: \(extracted.differences(from: bench.expected))")
                } else if top == ["docs"] {
                    let extracted = try TreeContents(runDirectory + "/x/docs")
                    context.check(
                        extracted == bench.expectedDocs,
                        "the winner differs from its source: \(extracted.differences(from: bench.expectedDocs))")
                } else {
                    context.fail("the archive holds \(top.sorted()), not one of the two sources")
                }
            }
            try await Aftermath.check(
                context, injector: nil, scratch: bench.scratch.path, destination: destination,
                succeeded: true)
            return Record(
                scenario: .racingPacks, outcome: "\(resultA.outcome.label)+\(resultB.outcome.label)",
                poolLag: context.poolLag ?? .zero, starved: context.starved)
        }

        // MARK: - Figures

        static func report(_ records: [Record], elapsed: Duration, tracker: ResourceTracker) {
            print(
                "STRESS: schedule runs=\(records.count) base-seed=\(StressSettings.hex(StressSettings.baseSeed)) "
                    + "elapsed=\(String(format: "%.1f s", elapsed.seconds))")
            for scenario in Scenario.allCases {
                let mine = records.filter { $0.scenario == scenario }
                guard !mine.isEmpty else { continue }
                let tally = Dictionary(grouping: mine, by: \.outcome).map { "\($0.key)=\($0.value.count)" }.sorted()
                print("STRESS: schedule \(scenario.rawValue): runs=\(mine.count) \(tally.joined(separator: " "))")
            }
            print("STRESS: schedule cancel-to-return \(distribution(records.compactMap(\.cancelLatency)))")
            print(
                "STRESS: schedule cooperative-pool-lag \(distribution(records.map(\.poolLag))) starved-runs=\(records.filter(\.starved).count)"
            )
            print(
                "STRESS: schedule stall-start-to-return (timeout \(stallTimeout.formatted)) \(distribution(records.compactMap(\.stallLatency)))"
            )
            print(tracker.summary(label: "schedule resources"))
        }

        /// Descriptors, threads and memory come back after every run instead of growing.
        static func checkResources(_ tracker: ResourceTracker) async throws {
            guard let baseline = tracker.baseline, var last = tracker.samples.last else { return }
            // Other suites of the process hold some for a while (an extraction deep in a tree
            // holds a descriptor per level): look again, for up to 15 s. What this suite leaked
            // stays open however long one looks.
            for _ in 0..<5 where last.descriptors > baseline.descriptors + 4 || last.threads > baseline.threads + 8 {
                let again = try await ResourceTracker.settledSample(settle: .seconds(3))
                last.descriptors = min(last.descriptors, again.descriptors)
                last.threads = min(last.threads, again.threads)
            }
            // A little slack for what other threads of the process open lazily; a leak per run
            // exceeds it within a few runs.
            #expect(
                last.descriptors <= baseline.descriptors + 4,
                "descriptors grew from \(baseline.descriptors) to \(last.descriptors): \(ProcessProbe.descriptors().map(\.target))")
            #expect(last.threads <= baseline.threads + 8, "threads grew from \(baseline.threads) to \(last.threads)")
            #expect(
                tracker.peakResident <= baseline.resident + (768 << 20),
                "resident memory peaked at \(ProcessProbe.mebibytes(tracker.peakResident)) from \(ProcessProbe.mebibytes(baseline.resident))"
            )
            #expect(
                tracker.residentGrowth <= 256 << 20,
                "resident memory grew run after run by \(ProcessProbe.mebibytes(tracker.residentGrowth))")
        }
    }
}
