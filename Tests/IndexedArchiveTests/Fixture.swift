import Foundation
import Testing

/// A temporary directory removed when the test ends, and helpers to fill and compare trees.
final class TemporaryDirectory {
    let path: String

    init() throws {
        let template = NSTemporaryDirectory() + "amk-test-XXXXXX"
        var bytes = Array(template.utf8CString)
        guard let made = mkdtemp(&bytes) else { throw CocoaError(.fileWriteUnknown) }
        path = String(cString: made)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    func file(_ relative: String, _ bytes: [UInt8], mode: Int = 0o644) throws {
        let full = path + "/" + relative
        try FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: full, contents: Data(bytes))
        chmod(full, mode_t(mode))
    }

    func file(_ relative: String, _ text: String, mode: Int = 0o644) throws {
        try file(relative, Array(text.utf8), mode: mode)
    }
}

/// Deterministic bytes: text-like when `text`, else noise that does not compress.
func sampleBytes(count: Int, seed: UInt64, text: Bool) -> [UInt8] {
    var state = seed &+ 0x9E37_79B9_7F4A_7C15
    func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    var out: [UInt8] = []
    out.reserveCapacity(count)
    if text {
        let words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
                     "{\"id\":", "\"name\":", "true", "false", "null", "0.5", "1024", "\n", ", ", "<key>", "</key>"]
        while out.count < count {
            out.append(contentsOf: words[Int(next() % UInt64(words.count))].utf8)
            out.append(32)
        }
        out.removeLast(out.count - count)
    } else {
        while out.count < count {
            withUnsafeBytes(of: next()) { out.append(contentsOf: $0) }
        }
        out.removeLast(out.count - count)
    }
    return out
}

/// What a tree holds, for comparing an extracted tree with its source.
struct TreeSnapshot: Equatable, CustomStringConvertible {
    struct Item: Equatable {
        var type: String
        var mode: UInt32
        var size: Int
        var content: [UInt8]
        var link: String?
        var mtimeSeconds: Int
        var mtimeNanoseconds: Int
    }

    var items: [String: Item]

    init(_ root: String, timesOfDirectories: Bool = true) throws {
        items = [:]
        let enumerator = FileManager.default.enumerator(atPath: root)!
        while let relative = enumerator.nextObject() as? String {
            let full = root + "/" + relative
            var info = stat()
            guard lstat(full, &info) == 0 else { continue }
            var item = Item(type: "?", mode: UInt32(info.st_mode) & 0o7777, size: 0, content: [], link: nil,
                            mtimeSeconds: info.st_mtim.tv_sec, mtimeNanoseconds: info.st_mtim.tv_nsec)
            switch info.st_mode & S_IFMT {
            case S_IFREG:
                item.type = "file"
                item.size = Int(info.st_size)
                item.content = Array(FileManager.default.contents(atPath: full) ?? Data())
            case S_IFDIR:
                item.type = "dir"
                if !timesOfDirectories { item.mtimeSeconds = 0; item.mtimeNanoseconds = 0 }
            case S_IFLNK:
                item.type = "link"
                item.link = try FileManager.default.destinationOfSymbolicLink(atPath: full)
                item.mode = 0
                item.mtimeSeconds = 0; item.mtimeNanoseconds = 0
            default:
                item.type = "other"
            }
            items[relative] = item
        }
    }

    var description: String { items.keys.sorted().joined(separator: "\n") }
}

/// Runs a tool; returns its exit status, stdout and stderr.
@discardableResult
func runTool(_ arguments: [String], stdin: Data? = nil, environment: [String: String] = ["LC_ALL": "C.UTF-8", "PATH": "/usr/bin:/bin"]) throws -> (status: Int32, stdout: Data, stderr: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = arguments
    process.environment = environment
    let out = Pipe(), err = Pipe(), input = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = input
    try process.run()
    if let stdin { input.fileHandleForWriting.write(stdin) }
    try input.fileHandleForWriting.close()
    // Read both pipes before waiting, so a chatty tool cannot fill a pipe and block.
    let group = DispatchGroup()
    nonisolated(unsafe) var errData = Data()
    group.enter()
    DispatchQueue.global().async { errData = err.fileHandleForReading.readDataToEndOfFile(); group.leave() }
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    group.wait()
    process.waitUntilExit()
    return (process.terminationStatus, outData, String(decoding: errData, as: UTF8.self))
}

func toolExists(_ name: String) -> Bool {
    ["/usr/bin/", "/bin/", "/usr/local/bin/"].contains { FileManager.default.isExecutableFile(atPath: $0 + name) }
}
