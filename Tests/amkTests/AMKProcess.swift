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

    static func collect(_ process: Process, stdout: URL, stderr: URL) throws -> Result {
        Result(status: process.terminationStatus,
               stdout: try String(contentsOf: stdout, encoding: .utf8),
               stderr: try String(contentsOf: stderr, encoding: .utf8))
    }
}
