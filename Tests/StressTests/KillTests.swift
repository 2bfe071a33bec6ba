import Foundation
import IndexedArchive
import Synchronization
import Testing

/// A child process, awaited without holding a thread.
final class ChildProcess: Sendable {
    /// Set when the process has ended; holds the task waiting for that, if any.
    final class ExitLatch: Sendable {
        private let state = Mutex<(continuation: CheckedContinuation<Void, Never>?, done: Bool)>((nil, false))

        func signal() {
            let waiting = state.withLock { state -> CheckedContinuation<Void, Never>? in
                state.done = true
                defer { state.continuation = nil }
                return state.continuation
            }
            waiting?.resume()
        }

        func wait() async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let done = state.withLock { state -> Bool in
                    if state.done { return true }
                    state.continuation = continuation
                    return false
                }
                if done { continuation.resume() }
            }
        }
    }

    let process: Process
    private let latch = ExitLatch()

    init(_ arguments: [String], executable: String, stderr: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        guard FileManager.default.createFile(atPath: stderr, contents: nil), let log = FileHandle(forWritingAtPath: stderr) else {
            throw ArchiveError(.io(errno: errno), "cannot create the log", path: stderr)
        }
        process.standardError = log
        self.process = process
        let latch = self.latch
        process.terminationHandler = { _ in latch.signal() }
        try process.run()
        try log.close()
    }

    func sendKill() { _ = kill(process.processIdentifier, SIGKILL) }

    /// Waits for the process to end; returns whether it was killed by a signal, and its status.
    func wait() async -> (signaled: Bool, status: Int32) {
        await latch.wait()
        return (process.terminationReason == .uncaughtSignal, process.terminationStatus)
    }
}

extension StressTests {
    /// `amk pack` killed with SIGKILL at a random moment leaves either nothing or a complete archive
    /// at the destination, and no temporary file. Needs the `amk` tool with its `pack` subcommand
    /// built beside the tests (`.build/debug/amk`); skipped until then.
    @Suite(.enabled(if: AmkTool.canPack, "needs .build/debug/amk with a `pack` subcommand")) struct KillTests {
        static func packArguments(_ sources: [String], to destination: String, preset: Int = 1) -> [String] {
            ["pack"] + sources + ["-o", destination, "--preset", String(preset), "--chunk-size", "1M", "-j", "2"]
        }

        static func stderrText(_ path: String) -> String {
            (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        }

        @Test func sigkillLeavesNothingOrACompleteArchive() async throws {
            let kills = max(6, StressSettings.runs / 10)
            let scratch = try ScratchDirectory("kill")
            let tree = try SourceTree.make(
                in: scratch.path, name: "app", seed: 0x4B11, largeFiles: [3_000_000, 2_000_000],
                smallBytes: 2_000_000)
            let expected = try TreeContents(tree.root)
            let log = scratch.path + "/stderr.txt"

            // One full run: it must work, and it tells how long a pack takes.
            let fullDestination = try scratch.subdirectory("full") + "/out.tar.xz"
            let start = ContinuousClock.now
            let full = try ChildProcess(Self.packArguments([tree.root], to: fullDestination), executable: AmkTool.path, stderr: log)
            let fullExit = await full.wait()
            let duration = ContinuousClock.now - start
            try #require(!fullExit.signaled && fullExit.status == 0, "amk pack failed: \(Self.stderrText(log))")
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
                let child = try ChildProcess(Self.packArguments([tree.root], to: destination), executable: AmkTool.path, stderr: log)
                try await Task.sleep(for: delay)
                child.sendKill()
                let exit = await child.wait()
                if !exit.signaled {
                    finished += 1
                    context.check(exit.status == 0, "amk pack exited with \(exit.status): \(Self.stderrText(log))")
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
            let scratch = try ScratchDirectory("race")
            let tree = try SourceTree.make(
                in: scratch.path, name: "app", seed: 0x4ACE, largeFiles: [1_500_000],
                smallBytes: 800_000)
            let expected = try TreeContents(tree.root)
            let expectedDocs = try TreeContents(tree.root + "/docs")
            for round in 0..<3 {
                let context = RunContext(index: round, seed: 0, scenario: "racing amk pack processes")
                let runDirectory = try scratch.subdirectory("run-\(round)")
                let destination = runDirectory + "/out.tar.xz"
                let first = try ChildProcess(
                    Self.packArguments([tree.root], to: destination, preset: 0), executable: AmkTool.path,
                    stderr: scratch.path + "/a.txt")
                let second = try ChildProcess(
                    Self.packArguments([tree.root + "/docs"], to: destination, preset: 0),
                    executable: AmkTool.path, stderr: scratch.path + "/b.txt")
                let (a, b) = (await first.wait(), await second.wait())
                context.check(!a.signaled && a.status == 0, "the first pack failed: \(Self.stderrText(scratch.path + "/a.txt"))")
                context.check(!b.signaled && b.status == 0, "the second pack failed: \(Self.stderrText(scratch.path + "/b.txt"))")
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
