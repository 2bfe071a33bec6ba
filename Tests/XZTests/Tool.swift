import TestSupport

/// The stock `xz` tool: an encoder independent of ours, whose files the decoder must read.
enum Tool {
    /// `xz` with `arguments` compressing `input` to stdout; fails the caller on a non-zero status.
    static func xz(_ arguments: [String], _ input: [UInt8]) throws -> [UInt8] {
        let result = try ChildProcess.run("xz", arguments + ["-c"], stdin: input)
        guard result.status == 0 else { throw ToolFailed(name: "xz", result: result) }
        return result.stdout
    }

    struct ToolFailed: Error, CustomStringConvertible {
        var name: String
        var result: ChildProcess.Result
        var description: String { "\(name) exited with \(result.status): \(result.stderr)" }
    }
}
