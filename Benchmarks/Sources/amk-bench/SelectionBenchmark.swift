import Foundation
import IndexedArchive
import SampleData

/// Selective extraction from one large block: one member, then 100 members spread over the same
/// block (issue #11, point 4).
///
/// Reading a member decodes its block from the block's start; 100 members of one 64 MiB block
/// once cost 100 such decodes (54.7 s against 0.6 s for one). The reader now decodes each block
/// once for all the selected members it holds, so both figures should be close. Measured in
/// process, through the engine's API, on an archive packed with one chunk as large as the block.
struct SelectionBenchmark {
    /// Tar bytes of the block.
    var blockBytes: Int
    var members = 100
    var memberBytes = 32 << 10
    var preset: Int
    var workDirectory: String

    struct Figures {
        var blockBytes: Int
        var members: Int
        var one: Double
        var all: Double

        var text: String {
            String(format: "selective extraction, one %d MiB block: 1 member %.2f s, %d members %.2f s (%.1fx one)",
                   blockBytes >> 20, one, members, all, all / max(one, 1e-9))
        }
    }

    /// Builds the tree (members of `memberBytes` interleaved with compressible filler up to the
    /// block's size), packs it in one chunk, and times both extractions.
    func run(log: (String) -> Void) async throws -> Figures {
        let root = "\(workDirectory)/selection"
        let source = "\(root)/tree"
        try? FileManager.default.removeItem(atPath: root)
        try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
        // Leave room for tar headers and the end of the stream inside the chunk.
        let filler = max(0, (blockBytes - (1 << 20)) / members - memberBytes)
        var generator = SplitMix64(seed: 0x5E1EC7)
        for index in 0..<members {
            try Self.text(count: memberBytes, &generator).write(to: URL(fileURLWithPath: String(format: "%@/m%03d", source, index)))
            try Self.text(count: filler, &generator).write(to: URL(fileURLWithPath: String(format: "%@/n%03d-filler", source, index)))
        }
        let archive = "\(root)/selection.tar.xz"
        var options = PackOptions()
        options.preset = preset
        options.chunkSize = blockBytes
        let names = (0..<members).map { String(format: "tree/m%03d", $0) }
        let summary = try await ArchivePacker.pack([PackSource(path: source)], to: .file(archive), options: options)
        func extract(_ selection: [String], into directory: String) async throws -> Double {
            let start = ContinuousClock.now
            let reader = try await ArchiveReader.open(path: archive)
            var extract = ExtractOptions()
            extract.members = Set(selection)
            let done = try await reader.extract(to: directory, options: extract)
            guard done.entries >= selection.count else {
                throw BenchError("selective extraction wrote \(done.entries) of \(selection.count) members")
            }
            return (ContinuousClock.now - start).seconds
        }
        let one = try await extract([names[members / 2]], into: "\(root)/one")
        let all = try await extract(names, into: "\(root)/all")
        log("selection: \(members) members of \(memberBytes >> 10) KiB over \(summary.blocks) data block(s) of \(blockBytes >> 20) MiB")
        try? FileManager.default.removeItem(atPath: root)
        return Figures(blockBytes: blockBytes, members: members, one: one, all: all)
    }

    /// Text-like bytes (words from a small alphabet): compressible as app data is.
    static func text(count: Int, _ generator: inout SplitMix64) -> Data {
        var bytes = [UInt8](repeating: 0x20, count: count)
        var index = 0
        while index < count {
            let word = Int(generator.next() % 9) + 1
            for _ in 0..<word where index < count {
                bytes[index] = UInt8(ascii: "a") + UInt8(generator.next() % 16)
                index += 1
            }
            index += 1
        }
        return Data(bytes)
    }
}
