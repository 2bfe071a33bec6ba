import Foundation
import TestSupport
import Testing

@testable import XZ

/// A file that is not xz is named for what it is, from the output of the tools that make it.
@Suite(.background) struct ForeignFormatTests {
    /// A one-member tar made by GNU tar, then compressed by `compressor` (nil: left as it is).
    static func tarFile(compressedBy compressor: [String]?) throws -> [UInt8] {
        let dir = try TemporaryDirectory(prefix: "ForeignFormatTests")
        try Data("hello\n".utf8).write(to: URL(fileURLWithPath: dir.path + "/a.txt"))
        let tar = try ChildProcess.run("tar", ["-cf", "-", "-C", dir.path, "a.txt"])
        guard tar.status == 0 else { throw Tool.ToolFailed(name: "tar", result: tar) }
        guard let compressor else { return tar.stdout }
        let compressed = try ChildProcess.run(compressor[0], Array(compressor.dropFirst()), stdin: tar.stdout)
        guard compressed.status == 0 else { throw Tool.ToolFailed(name: compressor[0], result: compressed) }
        return compressed.stdout
    }

    static let made: [(tool: [String]?, name: String)] = [
        (nil, "an uncompressed tar archive"), (["gzip", "-c"], "gzip-compressed data"),
        (["bzip2", "-c"], "bzip2-compressed data"), (["zstd", "-q", "-c"], "zstd-compressed data"),
        (["lzma", "-c"], "LZMA-alone data")
    ]

    @Test(arguments: made.indices)
    func filesMadeByOtherToolsAreNamedInTheError(_ index: Int) throws {
        let (tool, name) = Self.made[index]
        if let tool, ChildProcess.lookUp(tool[0]) == nil { return }  // not on this machine
        let file = try Self.tarFile(compressedBy: tool)
        #expect(ForeignFormat.describe(file)?.hasPrefix(name) == true, "\(String(describing: ForeignFormat.describe(file)))")
        // The streaming decoder, fed in small pieces, and the xz Index reader say the same.
        let decoder = StreamDecoder(memoryLimit: 1 << 26)
        let error = #expect(throws: XZError.self) {
            for start in stride(from: 0, to: file.count, by: 7) {
                try file[start..<min(file.count, start + 7)].withUnsafeBytes { try decoder.feed($0) { _ in } }
            }
            try decoder.finish { _ in }
        }
        #expect(error?.code == .format)
        #expect(error?.message.contains("this looks like \(name)") == true, "\(String(describing: error))")
        #expect(error?.message.contains("(.tar.xz)") == true)
        let indexError = #expect(throws: XZError.self) {
            _ = try XZFileIndex.read(fileSize: UInt64(file.count)) { offset, count in
                Array(file[Int(offset)..<min(file.count, Int(offset) + count)])
            }
        }
        #expect(indexError?.message.contains("this looks like \(name)") == true, "\(String(describing: indexError))")
    }

    @Test func signaturesWithoutATool() {
        #expect(ForeignFormat.describe([0x50, 0x4b, 0x03, 0x04, 0x14, 0]) == "a zip archive")
        #expect(ForeignFormat.describe([0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c, 0, 4]) == "a 7-Zip archive")
        #expect(ForeignFormat.describe([0x04, 0x22, 0x4d, 0x18, 0x64]) == "lz4-compressed data (.lz4)")
        // Text, and a header too short to hold tar's magic, are not guessed at.
        #expect(ForeignFormat.describe(Array("this is plainly not an xz file".utf8)) == nil)
        #expect(ForeignFormat.describe(Array("BZh".utf8)) == nil)
        #expect(ForeignFormat.notXZMessage(Array("plain".utf8)) == "not an xz file (no stream header magic where a stream should start)")
    }
}
