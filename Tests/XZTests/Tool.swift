import Foundation

/// Stock command-line tools, run through Foundation's `Process`.
enum Tool {
    static func path(_ name: String) -> String? {
        let paths = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init) + ["/usr/bin", "/bin"]
        return paths.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static func exists(_ name: String) -> Bool { path(name) != nil }

    struct Result {
        var status: Int32
        var stdout: [UInt8]
        var stderr: String
        var text: String { String(decoding: stdout, as: UTF8.self) }
    }

    /// Runs `name` with `arguments`, feeding `stdin` (if any) and collecting both outputs through
    /// temporary files, which cannot deadlock the way full pipes can.
    static func run(_ name: String, _ arguments: [String], stdin: [UInt8]? = nil) throws -> Result {
        guard let executable = path(name) else { throw ToolMissing(name: name) }
        let directory = try TemporaryDirectory()
        let inURL = directory.url.appendingPathComponent("stdin")
        let outURL = directory.url.appendingPathComponent("stdout")
        let errURL = directory.url.appendingPathComponent("stderr")
        guard FileManager.default.createFile(atPath: inURL.path, contents: Data(stdin ?? [])) else { throw CocoaError(.fileWriteUnknown) }
        guard FileManager.default.createFile(atPath: outURL.path, contents: nil) else { throw CocoaError(.fileWriteUnknown) }
        guard FileManager.default.createFile(atPath: errURL.path, contents: nil) else { throw CocoaError(.fileWriteUnknown) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["LC_ALL"] = "C.UTF-8"
        process.environment = environment
        let input = try FileHandle(forReadingFrom: inURL)
        let output = try FileHandle(forWritingTo: outURL)
        let error = try FileHandle(forWritingTo: errURL)
        defer {
            try? input.close()
            try? output.close()
            try? error.close()
        }
        process.standardInput = input
        process.standardOutput = output
        process.standardError = error
        try process.run()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus,
            stdout: [UInt8](try Data(contentsOf: outURL)),
            stderr: String(decoding: try Data(contentsOf: errURL), as: UTF8.self))
    }

    /// `xz` with `arguments` compressing `input` to stdout; fails the caller on a non-zero status.
    static func xz(_ arguments: [String], _ input: [UInt8]) throws -> [UInt8] {
        let result = try run("xz", arguments + ["-c"], stdin: input)
        guard result.status == 0 else { throw ToolFailed(name: "xz", result: result) }
        return result.stdout
    }

    struct ToolMissing: Error, CustomStringConvertible {
        var name: String
        var description: String { "\(name) is not installed" }
    }

    struct ToolFailed: Error, CustomStringConvertible {
        var name: String
        var result: Result
        var description: String { "\(name) exited with \(result.status): \(result.stderr)" }
    }
}

/// A directory removed when the value goes away.
final class TemporaryDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("XZTests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }
}
