import Foundation

/// Runs a `/bin/sh` command line in which `$AMK` is the built binary: the pipes of issue 16
/// (`amk pack d -o - | amk list -`) are tested as a user types them.
enum ShellPipeline {
    static func run(_ command: String, in directory: URL, scratch: URL) throws -> AMKProcess.Result {
        let id = UUID().uuidString
        let out = scratch.appendingPathComponent("sh-stdout-\(id)")
        let err = scratch.appendingPathComponent("sh-stderr-\(id)")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        // -e and pipefail where the shell has it: a failing amk anywhere in the pipe fails the run.
        process.arguments = ["-c", "set -e; (set -o pipefail) 2>/dev/null && set -o pipefail; " + command]
        process.currentDirectoryURL = directory
        var environment = ProcessInfo.processInfo.environment
        environment["AMK"] = AMKProcess.binary.path
        process.environment = environment
        let outHandle = try FileHandle(forWritingTo: out)
        let errHandle = try FileHandle(forWritingTo: err)
        defer {
            try? outHandle.close()
            try? errHandle.close()
        }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = outHandle
        process.standardError = errHandle
        try process.run()
        process.waitUntilExit()
        return try AMKProcess.collect(process, stdout: out, stderr: err)
    }

    /// Whether `tool` is on the PATH (tests that need it skip, visibly, without it).
    static func has(_ tool: String) -> Bool {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").contains { FileManager.default.isExecutableFile(atPath: "\($0)/\(tool)") }
    }
}
