import Foundation

/// Runs the built `amk` binary as a subprocess.
///
/// The test target cannot import an executable's code, so the CLI is tested as users meet it:
/// arguments in, exit status and output out. `swift build --build-tests` builds the binary because
/// this target depends on it.
enum AMKProcess {
    /// What a finished run left behind.
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// The package root, derived from this file's place in `Tests/amkTests/`.
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static let binary = packageRoot.appendingPathComponent(".build/debug/amk")

    /// Starts `amk` with `arguments`; output goes to files in `scratch` (pipes could fill up and
    /// stall a child that prints a lot while nobody reads).
    static func start(_ arguments: [String], in directory: URL? = nil, scratch: URL) throws -> (Process, stdout: URL, stderr: URL) {
        let id = UUID().uuidString
        let out = scratch.appendingPathComponent("stdout-\(id)")
        let err = scratch.appendingPathComponent("stderr-\(id)")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        let outHandle = try FileHandle(forWritingTo: out)
        let errHandle = try FileHandle(forWritingTo: err)
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = outHandle
        process.standardError = errHandle
        defer {
            // The child has its own copies once it runs. Ours would stay open as long as the
            // `Process` lives, and the stress suites of this test process count descriptors.
            try? outHandle.close()
            try? errHandle.close()
        }
        try process.run()
        return (process, out, err)
    }

    /// Runs `amk` with `arguments` to the end.
    static func run(_ arguments: [String], in directory: URL? = nil, scratch: URL) throws -> Result {
        let (process, out, err) = try start(arguments, in: directory, scratch: scratch)
        process.waitUntilExit()
        return try collect(process, stdout: out, stderr: err)
    }

    /// `/usr/bin/time`, which reports a child's peak resident set size (GNU time's `%M`).
    static let timeTool = "/usr/bin/time"

    /// Runs `amk` with `arguments` under ``timeTool`` and returns what it left behind with its
    /// peak resident set size in KiB, as the kernel accounted it for that process alone (time
    /// reads it from `wait4(2)`), not for this test process or its other children.
    static func runMeasured(_ arguments: [String], in directory: URL? = nil, scratch: URL) throws -> (Result, peakKiB: Int) {
        let report = scratch.appendingPathComponent("rss-\(UUID().uuidString)")
        let out = scratch.appendingPathComponent("stdout-\(UUID().uuidString)")
        let err = scratch.appendingPathComponent("stderr-\(UUID().uuidString)")
        for file in [out, err] { _ = FileManager.default.createFile(atPath: file.path, contents: nil) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: timeTool)
        process.arguments = ["-f", "%M", "-o", report.path, binary.path] + arguments
        if let directory { process.currentDirectoryURL = directory }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = try FileHandle(forWritingTo: err)
        try process.run()
        process.waitUntilExit()
        let result = try collect(process, stdout: out, stderr: err)
        // time adds a line ("Command exited with non-zero status 1") before the figure.
        let lines = try String(contentsOf: report, encoding: .utf8).split(separator: "\n")
        guard let figure = lines.last.flatMap({ Int($0.trimmingCharacters(in: .whitespaces)) }) else {
            throw CocoaError(.fileReadCorruptFile, userInfo: [NSLocalizedDescriptionKey: "time reported: \(lines)"])
        }
        return (result, figure)
    }

    static func collect(_ process: Process, stdout: URL, stderr: URL) throws -> Result {
        Result(
            status: process.terminationStatus,
            stdout: try String(contentsOf: stdout, encoding: .utf8),
            stderr: try String(contentsOf: stderr, encoding: .utf8))
    }
}
