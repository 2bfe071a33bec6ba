import Foundation
import TestSupport
import Testing

extension AMKTests {
    /// Ctrl-C during a pack stops it promptly, exits 1 and leaves nothing behind.
    @Suite @MainActor struct Interrupt {
        /// Starts `amk _stall` and waits until it says it is stalling (20 s at most), and 300 ms
        /// more: its signal handlers are installed right after the line is printed.
        static func startStall() async throws -> ChildProcess {
            let process = try AMKProcess.start(["_stall", "--seconds", "60"])
            let started = ContinuousClock.now
            while process.isRunning && !process.stdoutSoFar().contains("stalling")
                && ContinuousClock.now - started < .seconds(20)
            {
                try await Task.sleep(for: .milliseconds(20))
            }
            try await Task.sleep(for: .milliseconds(300))
            return process
        }

        /// A FIFO in `tree` and a descriptor holding it open for reading and writing: amk's open
        /// of it returns, and its reads wait for good (for what is written into the descriptor).
        static func heldFIFO(in tree: TestTree) throws -> (path: String, fd: Int32) {
            let fifo = tree.path("stream")
            try #require(mkfifo(fifo, 0o600) == 0)
            let held = open(fifo, O_RDWR | O_CLOEXEC)
            try #require(held >= 0)
            return (fifo, held)
        }

        /// How long after `sent` (a signal) `process` exited; nil, with an issue recorded, when it
        /// still ran `limit` after it (it is then killed).
        static func exitTime(
            of process: ChildProcess, since sent: ContinuousClock.Instant, within limit: Duration, after signal: String,
            sourceLocation: SourceLocation = #_sourceLocation
        ) async throws -> Duration? {
            while process.isRunning && ContinuousClock.now - sent < limit {
                try await Task.sleep(for: .milliseconds(20))
            }
            let elapsed = ContinuousClock.now - sent
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                try process.waitUntilExit()
                Issue.record("amk still ran \(limit.components.seconds) s after \(signal)", sourceLocation: sourceLocation)
                return nil
            }
            return elapsed
        }

        @Test(arguments: [SIGINT, SIGTERM, SIGHUP])
        func signalCancelsPackCleanly(signal: Int32) async throws {
            let tree = try TestTree()
            // ~40 MiB of letters at preset 9 takes well over ten seconds on two cores.
            for index in 0..<4 {
                try tree.write("src/big/part\(index).txt", TestTree.text(count: 10 << 20, seed: UInt64(100 + index)))
            }
            try tree.mkdir("out")
            let archive = tree.path("out/big.tar.xz")
            let process = try AMKProcess.start(
                ["pack", tree.path("src/big"), "-o", archive, "--preset", "9"])

            // Give it time to install its handlers and get into the compression.
            try await Task.sleep(for: .milliseconds(1500))
            try #require(process.isRunning, "the pack finished before it could be interrupted; the test proves nothing")
            let sent = ContinuousClock.now
            #expect(kill(process.processIdentifier, signal) == 0)
            guard let elapsed = try await Self.exitTime(of: process, since: sent, within: .seconds(10), after: "the signal") else {
                return
            }
            let result = try AMKProcess.collect(process)
            #expect(elapsed < .seconds(3), "took \(elapsed) to stop")
            #expect(result.terminationReason == .exit, "killed by the signal instead of exiting")
            #expect(result.status == 1)
            #expect(result.stderr == "amk: interrupted\n")
            #expect(result.stdout.isEmpty)
            let left = try FileManager.default.contentsOfDirectory(atPath: tree.path("out"))
            #expect(left.isEmpty, "left behind: \(left)")
        }

        /// Work that does not heed cancellation (a system call that never returns, as opening a
        /// FIFO used to be) still ends on the first signal: after the grace period the process
        /// exits without waiting for it.
        @Test(arguments: [SIGINT, SIGTERM])
        func firstSignalEndsWorkThatIgnoresCancellation(signal: Int32) async throws {
            let process = try await Self.startStall()
            try #require(process.isRunning, "amk _stall did not start")
            let sent = ContinuousClock.now
            #expect(kill(process.processIdentifier, signal) == 0)
            guard let elapsed = try await Self.exitTime(of: process, since: sent, within: .seconds(15), after: "the signal") else {
                return
            }
            let result = try AMKProcess.collect(process)
            // The grace period is 5 s; a loaded machine may add a little.
            #expect(elapsed < .seconds(7), "took \(elapsed) to stop")
            #expect(result.terminationReason == .exit, "killed by the signal instead of exiting")
            #expect(result.status == 1)
            #expect(result.stderr == "amk: interrupted\n")
            #expect(result.stdout == "stalling\n")
        }

        /// A second signal a moment after the first is the same interruption (GNU `timeout` and a
        /// terminal signal amk and its process group alike): the work is given its grace period
        /// rather than cut short at once.
        @Test func twoSignalsTogetherAreOneInterruption() async throws {
            let process = try await Self.startStall()
            try #require(process.isRunning, "amk _stall did not start")
            let sent = ContinuousClock.now
            #expect(kill(process.processIdentifier, SIGTERM) == 0)
            try await Task.sleep(for: .milliseconds(10))
            #expect(kill(process.processIdentifier, SIGTERM) == 0)
            guard let elapsed = try await Self.exitTime(of: process, since: sent, within: .seconds(15), after: "the signals") else {
                return
            }
            #expect(elapsed >= .seconds(4), "exited \(elapsed) after two signals 10 ms apart, before the grace period")
            #expect(try AMKProcess.collect(process).status == 1)
        }

        /// Signals that keep coming until the process exits (a key held down, a supervisor that
        /// repeats itself) never kill it by the signal: once the work has unwound it is on its way
        /// out, and the signals stay ignored until it has said so and exited with status 1. The
        /// default action used to come back as the work returned, and a signal in the moment
        /// before the exit killed amk without its message (status 130 in a shell).
        @Test func signalsUntilTheExitNeverKillIt() async throws {
            let tree = try TestTree()
            let (fifo, held) = try Self.heldFIFO(in: tree)
            defer { close(held) }
            for round in 0..<5 {
                let process = try AMKProcess.start(["extract", fifo, "-C", tree.path("out\(round)")])
                // The archive is opened inside the cancellable work, after the handlers are set.
                let started = ContinuousClock.now
                func hasOpenedTheStream() -> Bool {
                    let folder = "/proc/\(process.processIdentifier)/fd"
                    let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
                    return descriptors.contains { (try? FileManager.default.destinationOfSymbolicLink(atPath: folder + "/" + $0)) == fifo }
                }
                while process.isRunning && !hasOpenedTheStream() && ContinuousClock.now - started < .seconds(20) {
                    try await Task.sleep(for: .milliseconds(5))
                }
                try #require(process.isRunning, "amk ended before it was signalled")
                while process.isRunning && ContinuousClock.now - started < .seconds(30) {
                    _ = process.send(SIGINT)
                    try await Task.sleep(for: .milliseconds(1))
                }
                let result = try AMKProcess.collect(process)
                #expect(result.terminationReason == .exit, "round \(round): killed by a signal")
                #expect(result.status == 1, "round \(round)")
                #expect(result.stderr.hasSuffix("amk: interrupted\n"), "round \(round): \(result.stderr)")
            }
        }

        /// `info` copies a stream to a temporary file before it reads it; a writer that stalls
        /// without closing held that copy's read, and Ctrl-C ended it only at the 5 s deadline
        /// (`list`, `verify` and `extract` ended at once).
        @Test func anInterruptEndsInfoOnAStalledStream() async throws {
            let tree = try TestTree()
            let (fifo, held) = try Self.heldFIFO(in: tree)
            defer { close(held) }
            // The start of an xz stream, and then nothing.
            let start: [UInt8] = [0xFD, 0x37, 0x7A, 0x58, 0x5A, 0x00, 0x00, 0x04]
            #expect(write(held, start, start.count) == start.count)
            let process = try AMKProcess.start(["info", fifo])
            let launched = ContinuousClock.now
            // Once amk has read the bytes, the copy waits for more.
            var waiting = Int32(0)
            repeat {
                try await Task.sleep(for: .milliseconds(20))
                _ = ioctl(held, UInt(FIONREAD), &waiting)
            } while waiting > 0 && process.isRunning && ContinuousClock.now - launched < .seconds(20)
            try await Task.sleep(for: .milliseconds(200))
            try #require(process.isRunning, "amk info ended before it was interrupted")
            let sent = ContinuousClock.now
            #expect(process.send(SIGINT))
            guard let elapsed = try await Self.exitTime(of: process, since: sent, within: .seconds(15), after: "SIGINT") else {
                return
            }
            #expect(elapsed < .seconds(3), "exited \(elapsed) after the signal")
            let result = try AMKProcess.collect(process)
            #expect(result.status == 1)
            #expect(result.stderr == "amk: interrupted\n", "\(result.stderr)")
        }

        /// Two signals 10 ms apart while a member is being written: the member is removed, or the
        /// file it was replacing keeps its old content, and no temporary stays. The second signal
        /// used to exit at once, leaving the member cut short under its own name (two runs in
        /// three here) or a temporary beside the old file.
        @Test(arguments: [false, true])
        func twoSignalsMidFileLeaveNothingHalfWritten(replacing: Bool) throws {
            let tree = try TestTree()
            try tree.mkdir("d")
            try tree.mkdir("out/d")
            if replacing { try tree.write("out/d/big.txt", "old") }
            // 40 MB of base64: slow enough to decode that the signals find it being written.
            let run = try ShellPipeline.run(
                """
                head -c 30000000 /dev/urandom | base64 > d/big.txt
                "$AMK" pack d -o a.tar.xz --preset 1 -q
                "$AMK" extract a.tar.xz -C out & amk=$!
                i=0; while ! ls -l /proc/$amk/fd 2> /dev/null | grep -q "out/d/" && [ $i -lt 500 ]; do sleep 0.02; i=$((i+1)); done
                sleep 0.3
                kill -INT $amk; sleep 0.01; kill -INT $amk 2> /dev/null || true
                s=0; wait $amk || s=$?
                echo "status $s"
                """, in: tree.root)
            #expect(run.stdout.contains("status 1"), "\(run.stdout) \(run.stderr)")
            let left = try FileManager.default.contentsOfDirectory(atPath: tree.path("out/d"))
            if replacing {
                #expect(left == ["big.txt"], "left behind: \(left)")
                #expect(try tree.read("out/d/big.txt") == Array("old".utf8))
            } else {
                #expect(left.isEmpty, "left behind: \(left)")
            }
        }

        /// A second signal, a second or more after the first, does not wait for the grace period.
        @Test func secondSignalExitsAtOnce() async throws {
            let process = try await Self.startStall()
            try #require(process.isRunning, "amk _stall did not start")
            #expect(kill(process.processIdentifier, SIGTERM) == 0)
            try await Task.sleep(for: .milliseconds(1300))
            let sent = ContinuousClock.now
            #expect(kill(process.processIdentifier, SIGTERM) == 0)
            guard let elapsed = try await Self.exitTime(of: process, since: sent, within: .seconds(15), after: "the second signal") else {
                return
            }
            let result = try AMKProcess.collect(process)
            #expect(elapsed < .seconds(2), "took \(elapsed) to stop")
            #expect(result.status == 1)
            #expect(result.stderr == "amk: interrupted\n")
        }

        /// `amk list FILE` reads and prints on its main thread, without the machinery the other
        /// commands are interrupted through: held up writing to a FIFO that nobody reads (its
        /// listing is larger than the pipe holds), it still ends on the signal as they do. So do
        /// `-l` and `--json`, whose printing came after the interruptible part and was killed by
        /// the signal's default action (status 128+N, no message): their write never returns,
        /// and the first signal's deadline (5 s) ends them.
        @Test(arguments: [SIGINT, SIGTERM, SIGHUP], [[], ["-l"], ["--json"]] as [[String]])
        func aListingHeldUpWritingEndsCleanly(signal: Int32, options: [String]) async throws {
            let tree = try TestTree()
            for index in 0..<2_000 {
                try tree.write("src/many/a-member-with-a-rather-long-name-\(index).txt", "")
            }
            let pack = try AMKProcess.run(["pack", tree.path("src/many"), "-o", tree.path("many.tar.xz"), "--preset", "0"])
            try #require(pack.status == 0, "\(pack.stderr)")
            let fifo = tree.path("listing")
            try #require(mkfifo(fifo, 0o600) == 0)
            // Opened for reading first, and never read: the shell's open for writing then
            // succeeds, and amk's writes stop once the pipe is full.
            let reader = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
            try #require(reader >= 0)
            defer { close(reader) }
            let process = try ChildProcess.start(
                "/bin/sh", ["-c", "exec \"$AMK\" list \(options.joined(separator: " ")) many.tar.xz > listing"], in: tree.url("."),
                environment: ["AMK": AMKProcess.binary])
            try await Task.sleep(for: .milliseconds(1500))
            try #require(process.isRunning, "the listing finished; the test proves nothing")
            let sent = ContinuousClock.now
            #expect(kill(process.processIdentifier, signal) == 0)
            guard let elapsed = try await Self.exitTime(of: process, since: sent, within: .seconds(10), after: "the signal") else {
                return
            }
            let result = try AMKProcess.collect(process)
            #expect(elapsed < (options.isEmpty ? .seconds(2) : .seconds(8)), "took \(elapsed) to stop")
            #expect(result.terminationReason == .exit, "\(options): killed by the signal instead of exiting")
            #expect(result.status == 1)
            #expect(result.stderr == "amk: interrupted\n")
        }
    }
}
