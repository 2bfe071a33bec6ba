import Foundation
import Testing

extension AMKTests {
    /// A FIFO given as the archive. `list`, `info`, `verify` and `extract` read it as a stream
    /// (issue 16), waiting for its writer as tar does, and a SIGTERM ends that wait at once
    /// (opening a FIFO with no writer used to wait forever, deaf to SIGTERM). `salvage` and
    /// `import`, which need random access, refuse it at once.
    @Suite @MainActor struct NotARegularFile {
        @Test(arguments: [["list"], ["list", "--long"], ["info"], ["verify"], ["extract", "-C", "out"]])
        func aFIFOWithoutAWriterWaitsUntilSIGTERM(command: [String]) async throws {
            let tree = try TestTree()
            let fifo = tree.path("pipe.tar.xz")
            try #require(mkfifo(fifo, 0o600) == 0)
            let arguments = [command[0], fifo] + command.dropFirst().map { $0 == "out" ? tree.path($0) : $0 }
            let process = try AMKProcess.start(arguments)
            try await Task.sleep(for: .milliseconds(500))
            #expect(process.isRunning, "amk \(command[0]) should wait for the FIFO's writer")
            kill(process.processIdentifier, SIGTERM)
            let start = ContinuousClock.now
            while process.isRunning && ContinuousClock.now - start < .seconds(30) {
                try await Task.sleep(for: .milliseconds(20))
            }
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                try process.waitUntilExit()
                Issue.record("amk \(command[0]) ignored SIGTERM while waiting on the FIFO")
                return
            }
            let result = try AMKProcess.collect(process)
            #expect(result.status == 1)
            #expect(result.stderr.contains("interrupted"), "\(result.stderr)")
            #expect(!tree.exists("out"), "created the destination for an archive it could not open")
        }

        @Test(arguments: [["salvage", "-C", "out"], ["import", "--container", "container"]])
        func aFIFOIsRefusedAtOnce(command: [String]) async throws {
            let tree = try TestTree()
            let fifo = tree.path("pipe.tar.xz")
            try #require(mkfifo(fifo, 0o600) == 0)
            let arguments = [command[0], fifo] + command.dropFirst().map { $0 == "out" || $0 == "container" ? tree.path($0) : $0 }
            let process = try AMKProcess.start(arguments)
            let start = ContinuousClock.now
            // Nothing writes to the FIFO: an open that waits never ends by itself, so ending at
            // all is the test. The minute is only how long a loaded machine may take to say so.
            while process.isRunning && ContinuousClock.now - start < .seconds(60) {
                try await Task.sleep(for: .milliseconds(20))
            }
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                try process.waitUntilExit()
                Issue.record("amk \(command[0]) still waited on the FIFO after 60 s")
                return
            }
            let result = try AMKProcess.collect(process)
            #expect(result.status == 1)
            #expect(result.stderr.contains("not a regular file"), "\(result.stderr)")
            #expect(!tree.exists("out"), "created the destination for an archive it could not open")
        }
    }
}
