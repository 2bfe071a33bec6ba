import Foundation
import TestSupport
import Testing

/// The shared test support every target runs its tools and keeps its files with: here, since
/// TestSupport has no test target of its own and XZTests is the quickest to build.
@Suite struct ChildProcessTests {
    @Test func theExitStatusIsReported() throws {
        let failed = try ChildProcess.run("false")
        #expect(failed.status == 1)
        #expect(failed.terminationReason == .exit)
        let three = try ChildProcess.run("sh", ["-c", "exit 3"])
        #expect(three.status == 3)
        #expect(three.terminationReason == .exit)
        #expect(try ChildProcess.run("true").status == 0)
    }

    @Test func standardOutputAndErrorAreCapturedApart() throws {
        let result = try ChildProcess.run("sh", ["-c", "printf 'out\\n'; printf 'err\\n' >&2; printf 'more'"])
        #expect(result.status == 0)
        #expect(result.stdout == Array("out\nmore".utf8))
        #expect(result.stdoutString == "out\nmore")
        #expect(result.stderr == "err\n")
    }

    @Test func bytesThatAreNotUTF8ComeBackAsWritten() throws {
        let result = try ChildProcess.run("printf", ["\\377\\000a"])
        #expect(result.stdout == [0xFF, 0x00, 0x61])
    }

    /// 8 MiB in and out, far more than a pipe holds: through pipes written and read by one
    /// thread, this would deadlock.
    @Test func aLargeStandardInputRoundTrips() throws {
        var generator = SeededGenerator(seed: 8)
        var input = [UInt8](repeating: 0, count: 8 << 20)
        input.withUnsafeMutableBytes { bytes in
            for offset in stride(from: 0, to: bytes.count, by: 8) {
                bytes.storeBytes(of: generator.next(), toByteOffset: offset, as: UInt64.self)
            }
        }
        let result = try ChildProcess.run("cat", stdin: input)
        #expect(result.status == 0)
        #expect(result.stdout.count == input.count)
        #expect(result.stdout == input)
    }

    /// A tool that fills standard error before it writes its output, and its output before it
    /// reads its input, finishes all the same.
    @Test func aChattyToolCannotDeadlock() async throws {
        let input = [UInt8](repeating: 0x61, count: 1 << 20)
        let result = try await ChildProcess.run(
            "sh", ["-c", "head -c 1048576 /dev/zero >&2; head -c 1048576 /dev/zero; cat"], stdin: input)
        #expect(result.status == 0)
        #expect(result.stderrBytes.count == 1 << 20)
        #expect(result.stdout.count == 2 << 20)
        #expect(result.stdout.suffix(1 << 20).allSatisfy { $0 == 0x61 })
    }

    @Test func withoutStandardInputTheToolReadsEndOfFile() async throws {
        let result = try await ChildProcess.run("wc", ["-c"])
        #expect(result.status == 0)
        #expect(result.stdoutString.trimmingCharacters(in: .whitespacesAndNewlines) == "0")
    }

    @Test func aMissingToolIsReportedAsMissing() async throws {
        #expect(ChildProcess.lookUp("amk-no-such-tool") == nil)
        #expect(ChildProcess.lookUp("/no/such/dir/tool") == nil)
        let error = await #expect(throws: ToolMissing.self) { try await ChildProcess.run("amk-no-such-tool") }
        #expect(error?.name == "amk-no-such-tool")
        #expect(error?.description == "amk-no-such-tool is not installed")
    }

    @Test func toolsAreFoundOnThePathTheyAreGiven() throws {
        let sh = try #require(ChildProcess.lookUp("sh"))
        #expect(sh.hasPrefix("/") && sh.hasSuffix("/sh"))
        #expect(ChildProcess.lookUp(sh) == sh)
        #expect(ChildProcess.lookUp("sh", searchPath: "/no/such/dir") == nil)
        // A directory is not an executable, even with its search bit set.
        let directory = try TemporaryDirectory(prefix: "ChildProcessTests")
        try FileManager.default.createDirectory(atPath: directory.path("sh"), withIntermediateDirectories: false)
        #expect(ChildProcess.lookUp("sh", searchPath: directory.path + ":/no/such/dir") == nil)
    }

    @Test func theWorkingDirectoryIsHonoured() throws {
        let directory = try TemporaryDirectory(prefix: "ChildProcessTests")
        let result = try ChildProcess.run("sh", ["-c", "pwd -P"], in: directory.url)
        #expect(result.status == 0)
        let expected = directory.url.resolvingSymlinksInPath().path(percentEncoded: false)
        #expect(result.stdoutString == expected + "\n")
    }

    @Test func theEnvironmentIsOursPlusTheOverrides() throws {
        let script = "printf '%s|%s|%s' \"$LC_ALL\" \"$AMK_CHILD_PROCESS_TEST\" \"$PATH\""
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        #expect(try ChildProcess.run("sh", ["-c", script]).stdoutString == "C.UTF-8||\(path)")
        let overridden = try ChildProcess.run("sh", ["-c", script], environment: ["LC_ALL": "C", "AMK_CHILD_PROCESS_TEST": "yes"])
        #expect(overridden.stdoutString == "C|yes|\(path)")
    }

    @Test func standardInputCanStreamFromADescriptorWrittenAfterTheStart() async throws {
        let fds = try pipeClosedOnExec()
        let child = try ChildProcess.start("cat", stdinDescriptor: fds[0])
        close(fds[0])
        // Written only now that the child runs: a file written before the start could not do it.
        for line in ["one\n", "two\n"] {
            #expect(line.utf8.withContiguousStorageIfAvailable { write(fds[1], $0.baseAddress!, $0.count) } == line.utf8.count)
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(child.isRunning, "cat waits for the end of its input")
        close(fds[1])
        let result = try await child.wait()
        #expect(result.status == 0)
        #expect(result.stdoutString == "one\ntwo\n")
    }

    @Test func aStartedProcessCanBeSignalledAndAwaited() async throws {
        let child = try ChildProcess.start("sh", ["-c", "echo ready; exec sleep 30"])
        let start = ContinuousClock.now
        while !child.stdoutSoFar().contains("ready") && ContinuousClock.now - start < .seconds(10) {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(child.isRunning)
        #expect(child.send(SIGKILL))
        let result = try await child.wait()
        #expect(!child.isRunning)
        #expect(result.terminationReason == .uncaughtSignal)
        #expect(result.status == SIGKILL)
        #expect(result.stdoutString == "ready\n")
        // The kill ended it, not the 30 s sleep: well under 30 s, with room for a machine so busy
        // that starting `sh` took 12 s once (the full suite beside the fuzzers).
        #expect(ContinuousClock.now - start < .seconds(25))
        // Waiting again returns at once, with the same outcome.
        #expect(try child.waitUntilExit().status == SIGKILL)
    }
}

@Suite struct TemporaryDirectoryTests {
    @Test func aDirectoryIsNewEmptyAndNamedByItsPrefix() throws {
        let first = try TemporaryDirectory(prefix: "TemporaryDirectoryTests")
        let second = try TemporaryDirectory(prefix: "TemporaryDirectoryTests")
        #expect(first.path != second.path)
        #expect(URL(filePath: first.path).lastPathComponent.hasPrefix("TemporaryDirectoryTests-"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: first.path).isEmpty)
        #expect(first.url.path(percentEncoded: false) == first.path)
        #expect(first.url("a/b.txt").path(percentEncoded: false) == first.path + "/a/b.txt")
        #expect(first.path("a/b.txt") == first.path + "/a/b.txt")
    }

    @Test func theDirectoryAndItsContentsAreRemovedWithTheValue() throws {
        let path: String
        do {
            let directory = try TemporaryDirectory(prefix: "TemporaryDirectoryTests")
            path = directory.path
            try FileManager.default.createDirectory(atPath: directory.path("nested/deeper"), withIntermediateDirectories: true)
            #expect(FileManager.default.createFile(atPath: directory.path("nested/deeper/file"), contents: Data("x".utf8)))
            withExtendedLifetime(directory) {}
        }
        #expect(!FileManager.default.fileExists(atPath: path))
    }
}
