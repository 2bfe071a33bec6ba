import Foundation
import TestSupport

/// A temporary directory for one test, removed when the test ends, with helpers to fill it.
final class TestTree {
    let directory: TemporaryDirectory
    var root: URL { directory.url }

    init() throws {
        directory = try TemporaryDirectory(prefix: "amkTests")
    }

    func url(_ relative: String) -> URL { directory.url(relative) }

    func path(_ relative: String) -> String { directory.path(relative) }

    /// Writes `bytes` at `relative`, creating parent directories.
    @discardableResult
    func write(_ relative: String, _ bytes: [UInt8], mode: Int = 0o644) throws -> URL {
        let file = url(relative)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(bytes).write(to: file)
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: file.path)
        return file
    }

    func write(_ relative: String, _ text: String) throws {
        try write(relative, Array(text.utf8))
    }

    func mkdir(_ relative: String) throws {
        try FileManager.default.createDirectory(at: url(relative), withIntermediateDirectories: true)
    }

    func symlink(_ relative: String, to target: String) throws {
        try FileManager.default.createSymbolicLink(atPath: path(relative), withDestinationPath: target)
    }

    func read(_ relative: String) throws -> [UInt8] {
        Array(try Data(contentsOf: url(relative)))
    }

    func exists(_ relative: String) -> Bool {
        FileManager.default.fileExists(atPath: path(relative))
    }

    /// `src/app`: `a.txt`, `docs/b.txt` and `docs/c.txt`, a link to `a.txt` and an empty folder,
    /// with `extra` files (paths under `src/app`, and their text), packed by amk to `app.tar.xz`,
    /// whose path it returns. The small tree the selection and output tests share.
    func packApp(extra: [(String, String)] = []) throws -> String {
        try write("src/app/a.txt", "alpha\n")
        try write("src/app/docs/b.txt", "bravo\n")
        try write("src/app/docs/c.txt", "charlie\n")
        for (name, text) in extra { try write("src/app/" + name, text) }
        try symlink("src/app/link", to: "a.txt")
        try mkdir("src/app/empty")
        let archive = path("app.tar.xz")
        let pack = try AMKProcess.run(["pack", path("src/app"), "-o", archive])
        guard pack.status == 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "amk pack failed: \(pack.stderr)"])
        }
        return archive
    }

    /// Pseudo-random bytes from a fixed seed: the same every run, so a failure reproduces.
    static func noise(count: Int, seed: UInt64) -> [UInt8] {
        var state = seed | 1
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBufferPointer { buffer in
            var index = 0
            while index < buffer.count {
                state ^= state << 13
                state ^= state >> 7
                state ^= state << 17
                var word = state
                for _ in 0..<8 where index < buffer.count {
                    buffer[index] = UInt8(truncatingIfNeeded: word)
                    word >>= 8
                    index += 1
                }
            }
        }
        return bytes
    }

    /// Text of random letters and spaces: compresses, but slowly at high presets (few long
    /// matches), which is what the interruption test needs.
    static func text(count: Int, seed: UInt64) -> [UInt8] {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz     \n".utf8)
        var bytes = noise(count: count, seed: seed)
        bytes.withUnsafeMutableBufferPointer { buffer in
            for index in buffer.indices { buffer[index] = alphabet[Int(buffer[index] & 31)] }
        }
        return bytes
    }
}
