import Foundation
import IndexedArchive
import TestSupport
import Testing

extension StressTests {
    /// `amk pack` killed with SIGKILL at a random moment leaves either nothing or a complete archive
    /// at the destination, and no temporary file. Needs the `amk` tool with its `pack` subcommand
    /// built beside the tests; skipped until then.
    @Suite(.enabled(if: AmkTool.canPack, "needs the built amk with a `pack` subcommand")) struct KillTests {
        static func packArguments(_ sources: [String], to destination: String, preset: Int = 1) -> [String] {
            ["pack"] + sources + ["-o", destination, "--preset", String(preset), "--chunk-size", "1M", "-j", "2"]
        }

        /// Starts `amk` with `arguments`, in the test process's own environment.
        static func amk(_ arguments: [String]) throws -> ChildProcess {
            try ChildProcess.start(AmkTool.path, arguments, environment: [:])
        }

        @Test func sigkillLeavesNothingOrACompleteArchive() async throws {
            let kills = max(6, StressSettings.runs / 10)
            let scratch = try TemporaryDirectory(prefix: "amk-stress-kill")
            let tree = try SourceTree.make(
                in: scratch.path, name: "app", seed: 0x4B11, largeFiles: [3_000_000, 2_000_000],
                smallBytes: 2_000_000)
            let expected = try TreeContents(tree.root)

            // One full run: it must work, and it tells how long a pack takes.
            let fullDestination = try scratch.subdirectory("full") + "/out.tar.xz"
            let start = ContinuousClock.now
            let full = try Self.amk(Self.packArguments([tree.root], to: fullDestination))
            let fullExit = try await full.wait()
            let duration = ContinuousClock.now - start
            try #require(fullExit.terminationReason == .exit && fullExit.status == 0, "amk pack failed: \(fullExit.stderr)")
            #expect(try await ArchiveReader(path: fullDestination).verify() > 0)

            var absent = 0
            var complete = 0
            var finished = 0
            for index in 0..<kills {
                let seed = StressSettings.seed(forRun: index)
                var rng = SeededGenerator(seed: seed ^ 0x4B11_4B11)
                let context = RunContext(index: index, seed: seed, scenario: "SIGKILL amk pack")
                let runDirectory = try scratch.subdirectory("run-\(index)")
                let destination = runDirectory + "/out.tar.xz"
                // Stratified over 0 to 1.2 times a full pack, so that every stretch of it (start-up,
                // enumeration, compression, the index, the rename, after the end) is hit.
                let fraction = (Double(index) + Double.random(in: 0..<1, using: &rng)) / Double(kills)
                let delay = Duration.milliseconds(Int(duration.milliseconds * 1.2 * fraction))
                let child = try Self.amk(Self.packArguments([tree.root], to: destination))
                try await Task.sleep(for: delay)
                child.send(SIGKILL)
                let exit = try await child.wait()
                if exit.terminationReason != .uncaughtSignal {
                    finished += 1
                    context.check(exit.status == 0, "amk pack exited with \(exit.status): \(exit.stderr)")
                    context.check(fileExists(destination), "amk pack exited 0 but left no archive")
                }
                if fileExists(destination) {
                    complete += 1
                    if let contents = await Aftermath.contents(of: destination, extractTo: scratch.path + "/x", context) {
                        let extracted = try TreeContents(scratch.path + "/x/app")
                        context.check(contents.items.keys.allSatisfy { $0 == "app" || $0.hasPrefix("app/") }, "unexpected members")
                        context.check(
                            extracted == expected, "the archive left after the kill differs: \(extracted.differences(from: expected))")
                    }
                    try? FileManager.default.removeItem(atPath: scratch.path + "/x")
                } else {
                    absent += 1
                }
                let leftovers = try FileManager.default.contentsOfDirectory(atPath: runDirectory).filter { $0 != "out.tar.xz" }
                context.check(leftovers.isEmpty, "killed after \(delay.formatted), amk left \(leftovers) beside the destination")
                try? FileManager.default.removeItem(atPath: runDirectory)
            }
            print(
                "STRESS: sigkill runs=\(kills) full-pack=\(duration.formatted) absent=\(absent) complete=\(complete) "
                    + "finished-before-kill=\(finished)")
        }

        @Test func racingProcessesBothSucceed() async throws {
            let scratch = try TemporaryDirectory(prefix: "amk-stress-race")
            let tree = try SourceTree.make(
                in: scratch.path, name: "app", seed: 0x4ACE, largeFiles: [1_500_000],
                smallBytes: 800_000)
            let expected = try TreeContents(tree.root)
            let expectedDocs = try TreeContents(tree.root + "/docs")
            for round in 0..<3 {
                let context = RunContext(index: round, seed: 0, scenario: "racing amk pack processes")
                let runDirectory = try scratch.subdirectory("run-\(round)")
                let destination = runDirectory + "/out.tar.xz"
                let first = try Self.amk(Self.packArguments([tree.root], to: destination, preset: 0))
                let second = try Self.amk(Self.packArguments([tree.root + "/docs"], to: destination, preset: 0))
                let (a, b) = (try await first.wait(), try await second.wait())
                context.check(a.terminationReason == .exit && a.status == 0, "the first pack failed: \(a.stderr)")
                context.check(b.terminationReason == .exit && b.status == 0, "the second pack failed: \(b.stderr)")
                if let contents = await Aftermath.contents(of: destination, extractTo: scratch.path + "/x", context) {
                    let top = Set(contents.items.keys.filter { !$0.contains("/") })
                    if top == ["app"] {
                        context.check(try TreeContents(scratch.path + "/x/app") == expected, "the winner differs from its source")
                    } else if top == ["docs"] {
                        context.check(try TreeContents(scratch.path + "/x/docs") == expectedDocs, "the winner differs from its source")
                    } else {
                        context.fail("the archive holds \(top.sorted()), not one of the two sources")
                    }
                }
                try? FileManager.default.removeItem(atPath: scratch.path + "/x")
                context.check(temporaryFiles(in: runDirectory).isEmpty, "temporary files left: \(temporaryFiles(in: runDirectory))")
            }
        }
    }
}
