import Foundation
import Testing

extension AMKTests {
    /// Ctrl-C during a pack stops it promptly, exits 1 and leaves nothing behind.
    @Suite @MainActor struct Interrupt {
        @Test(arguments: [SIGINT, SIGTERM])
        func signalCancelsPackCleanly(signal: Int32) async throws {
            let tree = try TestTree()
            // ~40 MiB of letters at preset 9 takes well over ten seconds on two cores.
            for index in 0..<4 {
                try tree.write("src/big/part\(index).txt", TestTree.text(count: 10 << 20, seed: UInt64(100 + index)))
            }
            try tree.mkdir("out")
            let archive = tree.path("out/big.tar.xz")
            let (process, stdout, stderr) = try AMKProcess.start(
                ["pack", tree.path("src/big"), "-o", archive, "--preset", "9"], scratch: tree.root)

            // Give it time to install its handlers and get into the compression.
            try await Task.sleep(for: .milliseconds(1500))
            try #require(process.isRunning, "the pack finished before it could be interrupted; the test proves nothing")
            let sent = ContinuousClock.now
            #expect(kill(process.processIdentifier, signal) == 0)
            while process.isRunning && ContinuousClock.now - sent < .seconds(10) {
                try await Task.sleep(for: .milliseconds(20))
            }
            let elapsed = ContinuousClock.now - sent
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                Issue.record("amk still ran 10 s after the signal")
                return
            }
            let result = try AMKProcess.collect(process, stdout: stdout, stderr: stderr)
            #expect(elapsed < .seconds(3), "took \(elapsed) to stop")
            #expect(process.terminationReason == .exit, "killed by the signal instead of exiting")
            #expect(result.status == 1)
            #expect(result.stderr == "amk: interrupted\n")
            #expect(result.stdout.isEmpty)
            let left = try FileManager.default.contentsOfDirectory(atPath: tree.path("out"))
            #expect(left.isEmpty, "left behind: \(left)")
        }
    }
}
