import Foundation
import TestSupport

/// Runs the built `amk` binary as a subprocess.
///
/// The test target cannot import an executable's code, so the CLI is tested as users meet it:
/// arguments in, exit status and output out. `swift build --build-tests` builds the binary because
/// this target depends on it. amk runs in the test process's own environment, as from a shell.
enum AMKProcess {
    /// What a finished run left behind.
    struct Result {
        var status: Int32
        var terminationReason: ChildProcess.TerminationReason
        var stdout: String
        var stderr: String

        /// The run's output as text. amk writes UTF-8 only (it escapes what is not): anything
        /// else is an error, not text to repair.
        init(_ result: ChildProcess.Result) throws {
            guard let stdout = String(validating: result.stdout, as: UTF8.self),
                let stderr = String(validating: result.stderrBytes, as: UTF8.self)
            else {
                throw CocoaError(.fileReadInapplicableStringEncoding, userInfo: [NSLocalizedDescriptionKey: "amk wrote invalid UTF-8"])
            }
            self.status = result.status
            self.terminationReason = result.terminationReason
            self.stdout = stdout
            self.stderr = stderr
        }
    }

    /// The `amk` built with these tests.
    static let binary = BuildProducts.path("amk")

    /// Starts `amk` with `arguments`.
    static func start(_ arguments: [String], in directory: URL? = nil, environment: [String: String] = [:]) throws -> ChildProcess {
        try ChildProcess.start(binary, arguments, in: directory, environment: environment)
    }

    /// Runs `amk` with `arguments` to the end, with `environment` added to this process's.
    static func run(_ arguments: [String], in directory: URL? = nil, environment: [String: String] = [:]) throws -> Result {
        try collect(start(arguments, in: directory, environment: environment))
    }

    /// Runs `amk` with `arguments` as an unprivileged user: as nobody through `setpriv` when the
    /// tests run as root (as CI runs them), as this user otherwise.
    static func runUnprivileged(_ arguments: [String]) throws -> Result {
        guard geteuid() == 0 else { return try run(arguments) }
        return try Result(
            ChildProcess.run(
                "/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", binary] + arguments, environment: [:]))
    }

    /// Waits for `process` to end and returns what it left behind.
    static func collect(_ process: ChildProcess) throws -> Result {
        try Result(process.waitUntilExit())
    }

    /// `/usr/bin/time`, which reports a child's peak resident set size (GNU time's `%M`).
    static let timeTool = "/usr/bin/time"

    /// Runs `amk` with `arguments` under ``timeTool`` and returns what it left behind with its
    /// peak resident set size in KiB, as the kernel accounted it for that process alone (time
    /// reads it from `wait4(2)`), not for this test process or its other children.
    /// With `piping`, the file at that path comes to its standard input through a pipe, as a
    /// stream it cannot seek (the measure is then amk's or `cat`'s, whichever took more).
    static func runMeasured(_ arguments: [String], piping: String? = nil, in directory: URL? = nil) throws -> (Result, peakKiB: Int) {
        let report = try TemporaryDirectory(prefix: "amk-rss")
        let command =
            piping.map { ["/bin/sh", "-c", #"input=$1; shift; cat "$input" | "$0" "$@""#, binary, $0] + arguments } ?? [binary] + arguments
        let result = try Result(
            ChildProcess.run(timeTool, ["-f", "%M", "-o", report.path("rss")] + command, in: directory, environment: [:]))
        // time adds a line ("Command exited with non-zero status 1") before the figure.
        let lines = try String(contentsOfFile: report.path("rss"), encoding: .utf8).split(separator: "\n")
        guard let figure = lines.last.flatMap({ Int($0.trimmingCharacters(in: .whitespaces)) }) else {
            throw CocoaError(.fileReadCorruptFile, userInfo: [NSLocalizedDescriptionKey: "time reported: \(lines)"])
        }
        return (result, figure)
    }
}
