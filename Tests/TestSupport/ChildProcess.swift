package import Foundation
import Synchronization

/// A child process of a test: a stock tool (`xz`, `tar`, `python3`), the built `amk`, a shell.
///
/// Every test target runs its processes through this one type, so that they all get what
/// hand-written `Process` code kept getting subtly wrong:
///
/// - Standard input, output and error go through temporary files, never pipes. A tool that
///   writes more than a pipe holds (64 KiB) before it has read all its input, or fills its
///   standard error while the test reads its standard output, cannot deadlock the test; and no
///   thread has to pump a pipe into a buffer that another thread reads.
/// - The environment is the test process's own plus a few overrides, by default
///   `LC_ALL=C.UTF-8`: a tool's messages and listings do not depend on the machine's locale.
/// - An executable given by name is looked up on the `PATH` the child gets, and a missing one is
///   reported as ``ToolMissing``, not as a launch failure with an errno.
/// - The `async` variants wait through the process's termination handler: no thread of Swift's
///   cooperative pool (two of them on a 2-core machine) is held while a tool runs for seconds.
///
/// ``run(_:_:stdin:in:environment:)`` runs a process to completion and returns its ``Result``.
/// ``start(_:_:stdin:in:environment:)`` returns the running process, for the tests that signal
/// it, read its output while it runs, or run several at once; its temporary files live as long
/// as it does.
package final class ChildProcess: Sendable {
    /// How a process ended, as Foundation's `Process` reports it.
    package enum TerminationReason: Sendable, Equatable {
        /// It exited; ``Result/status`` is its exit status.
        case exit
        /// A signal killed it; ``Result/status`` is the signal's number.
        case uncaughtSignal
    }

    /// What a finished process left behind.
    package struct Result: Sendable {
        /// The exit status, or the number of the signal that killed the process.
        package var status: Int32
        package var terminationReason: TerminationReason
        /// Everything the process wrote to its standard output.
        package var stdout: [UInt8]
        /// Everything the process wrote to its standard error, as written.
        package var stderrBytes: [UInt8]

        /// The standard output as text (invalid UTF-8 repaired).
        package var stdoutString: String { String(decoding: stdout, as: UTF8.self) }

        /// The standard error as text (invalid UTF-8 repaired).
        package var stderr: String { String(decoding: stderrBytes, as: UTF8.self) }
    }

    /// The environment overrides of a tool run by default: messages and listings in the C locale,
    /// with UTF-8 names printed as they are.
    package static let defaultEnvironment = ["LC_ALL": "C.UTF-8"]

    private let process: Process
    private let ended: ExitLatch
    /// Holds the files of the standard streams; removed when the process value goes away.
    private let files: TemporaryDirectory

    private init(process: Process, ended: ExitLatch, files: TemporaryDirectory) {
        self.process = process
        self.ended = ended
        self.files = files
    }

    // MARK: - Running

    /// Runs `executable` (an absolute path, or a name looked up on the child's `PATH`) with
    /// `arguments` to completion and returns what it left behind, blocking the calling thread.
    ///
    /// - Parameters:
    ///   - stdin: the bytes the process reads on its standard input; `nil` for none (end of file
    ///     at once, where `Process` would let it read the test's own standard input).
    ///   - directory: its working directory; `nil` for the test process's.
    ///   - environment: variables set on top of the test process's environment.
    /// - Throws: ``ToolMissing`` if there is no such executable, or what launching it threw.
    package static func run(
        _ executable: String, _ arguments: [String] = [], stdin: [UInt8]? = nil, in directory: URL? = nil,
        environment: [String: String] = defaultEnvironment
    ) throws -> Result {
        try start(executable, arguments, stdin: stdin, in: directory, environment: environment).waitUntilExit()
    }

    /// Runs `executable` to completion without holding a thread while it runs; see
    /// ``run(_:_:stdin:in:environment:)``.
    package static func run(
        _ executable: String, _ arguments: [String] = [], stdin: [UInt8]? = nil, in directory: URL? = nil,
        environment: [String: String] = defaultEnvironment
    ) async throws -> Result {
        try await start(executable, arguments, stdin: stdin, in: directory, environment: environment).wait()
    }

    /// Starts `executable` and returns it running; the parameters are those of
    /// ``run(_:_:stdin:in:environment:)``.
    package static func start(
        _ executable: String, _ arguments: [String] = [], stdin: [UInt8]? = nil, in directory: URL? = nil,
        environment: [String: String] = defaultEnvironment
    ) throws -> ChildProcess {
        try launch(executable, arguments, input: stdin.map { .bytes($0) } ?? .none, in: directory, environment: environment)
    }

    /// Starts `executable` reading its standard input from `stdinDescriptor`, which the caller
    /// keeps and closes: a pipe's read end, for bytes that must stream to the child as they are
    /// made (gigabytes that never touch the disk, an archive as it is packed). Close the write end
    /// when done, or the child never sees the end of its input.
    package static func start(
        _ executable: String, _ arguments: [String] = [], stdinDescriptor: Int32, in directory: URL? = nil,
        environment: [String: String] = defaultEnvironment
    ) throws -> ChildProcess {
        try launch(executable, arguments, input: .descriptor(stdinDescriptor), in: directory, environment: environment)
    }

    private enum Input {
        case none
        case bytes([UInt8])
        case descriptor(Int32)
    }

    private static func launch(
        _ executable: String, _ arguments: [String], input: Input, in directory: URL?, environment: [String: String]
    ) throws -> ChildProcess {
        let variables = ProcessInfo.processInfo.environment.merging(environment) { _, override in override }
        guard let path = lookUp(executable, searchPath: variables["PATH"]) else { throw ToolMissing(name: executable) }
        let files = try TemporaryDirectory(prefix: "amk-child")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.environment = variables
        if let directory { process.currentDirectoryURL = directory }

        // Our copies of the descriptors are closed once the child has its own: open, they would
        // live as long as the `Process`, and some tests count this process's descriptors.
        var handles: [FileHandle] = []
        defer { for handle in handles { try? handle.close() } }
        func file(_ name: String, contents: [UInt8]?, forWriting: Bool) throws -> FileHandle {
            guard FileManager.default.createFile(atPath: files.path(name), contents: contents.map { Data($0) }) else {
                throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: files.path(name)])
            }
            let handle = try forWriting ? FileHandle(forWritingTo: files.url(name)) : FileHandle(forReadingFrom: files.url(name))
            handles.append(handle)
            return handle
        }
        switch input {
        case .none: process.standardInput = FileHandle.nullDevice
        case .bytes(let bytes): process.standardInput = try file("stdin", contents: bytes, forWriting: false)
        case .descriptor(let fd): process.standardInput = FileHandle(fileDescriptor: fd, closeOnDealloc: false)
        }
        process.standardOutput = try file("stdout", contents: nil, forWriting: true)
        process.standardError = try file("stderr", contents: nil, forWriting: true)

        let ended = ExitLatch()
        process.terminationHandler = { _ in ended.open() }
        try process.run()
        return ChildProcess(process: process, ended: ended, files: files)
    }

    // MARK: - A running process

    /// The process's identifier, for `kill(2)` and the like.
    package var processIdentifier: Int32 { process.processIdentifier }

    /// Whether the process is still running.
    package var isRunning: Bool { process.isRunning }

    /// Sends `signal` to the process; returns whether `kill(2)` succeeded.
    @discardableResult
    package func send(_ signal: Int32) -> Bool { kill(process.processIdentifier, signal) == 0 }

    /// What the process has written to its standard output so far, as text (invalid UTF-8
    /// repaired), for a test that waits for a line before it goes on.
    package func stdoutSoFar() -> String {
        String(decoding: FileManager.default.contents(atPath: files.path("stdout")) ?? Data(), as: UTF8.self)
    }

    /// Waits for the process to end, blocking the calling thread, and returns what it left behind.
    @discardableResult
    package func waitUntilExit() throws -> Result {
        process.waitUntilExit()
        return try collect()
    }

    /// Waits for the process to end without holding a thread, and returns what it left behind.
    @discardableResult
    package func wait() async throws -> Result {
        await ended.wait()
        return try collect()
    }

    private func collect() throws -> Result {
        Result(
            status: process.terminationStatus,
            terminationReason: process.terminationReason == .uncaughtSignal ? .uncaughtSignal : .exit,
            stdout: Array(try Data(contentsOf: files.url("stdout"))),
            stderrBytes: Array(try Data(contentsOf: files.url("stderr"))))
    }

    // MARK: - Finding executables

    /// The path of the executable `name`: `name` itself if it holds a `/` and is executable, else
    /// the first executable of that name in `searchPath`'s directories (by default the test
    /// process's `PATH`, or `/usr/bin:/bin` without one); `nil` if there is none.
    package static func lookUp(_ name: String, searchPath: String? = nil) -> String? {
        if name.contains("/") { return isExecutable(name) ? name : nil }
        let directories = (searchPath ?? ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        return directories.lazy.map { "\($0)/\(name)" }.first(where: isExecutable)
    }

    private static func isExecutable(_ path: String) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && !isDirectory.boolValue
            && FileManager.default.isExecutableFile(atPath: path)
    }
}

/// Opened once when the process has ended; wakes the tasks waiting for that.
private final class ExitLatch: Sendable {
    private let state = Mutex<(open: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

    func open() {
        let waiting = state.withLock { state in
            state.open = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }

    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let open = state.withLock { state in
                if !state.open { state.waiting.append(continuation) }
                return state.open
            }
            if open { continuation.resume() }
        }
    }
}
