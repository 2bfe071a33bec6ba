import Foundation
import TestSupport
import Testing

@testable import IndexedArchive

extension EngineSuites {
    /// Selective extraction decodes each block once for all the selected members it holds.
    @Suite struct SelectiveExtractionTests {
        /// 60 files of 8 KiB in one 4 MiB chunk: one data block.
        static func packOneBlock(in dir: TemporaryDirectory) async throws -> String {
            try await offPool {
                for index in 0..<60 {
                    try dir.file("src/f\(index).bin", sampleBytes(count: 8192, seed: UInt64(index), text: index % 2 == 0))
                }
            }
            var options = PackOptions()
            options.preset = 0
            options.chunkSize = 4 << 20
            let archive = dir.path + "/one.tar.xz"
            _ = try await ArchivePacker.pack([PackSource(path: dir.path + "/src")], to: .file(archive), options: options)
            return archive
        }

        @Test func membersSharingABlockAreExtractedFromOneDecodeOfIt() async throws {
            let dir = try TemporaryDirectory()
            let archive = try await Self.packOneBlock(in: dir)
            let reader = try await ArchiveReader.open(path: archive)
            #expect(try await reader.info().dataBlocks == 1)
            let chosen = stride(from: 3, to: 60, by: 3).map { "src/f\($0).bin" }
            var options = ExtractOptions()
            options.members = Set(chosen)
            let before = reader.blockDecodeCount
            let summary = try await reader.extract(to: dir.path + "/out", options: options)
            #expect(reader.blockDecodeCount - before == 1, "one decode of the block for \(chosen.count) members")
            #expect(summary.entries == chosen.count)
            for (number, name) in zip(stride(from: 3, to: 60, by: 3), chosen) {
                let written = try await readBytes(dir.path + "/out/" + name)
                #expect(written == sampleBytes(count: 8192, seed: UInt64(number), text: number % 2 == 0), "\(name)")
            }
            #expect(listing(dir.path + "/out/src").count == chosen.count)
        }

        @Test func membersOfOneBlockFormOneGroupInArchiveOrder() async throws {
            let dir = try TemporaryDirectory()
            let archive = try await Self.packOneBlock(in: dir)
            let reader = try await ArchiveReader.open(path: archive)
            let entries = try await reader.entries()
            let fileIndex = try #require(reader.fileIndex)
            let groups = try SelectiveExtraction.groups(entries.filter { ["src/f4.bin", "src/f7.bin", "src/f9.bin"].contains($0.path) }) {
                entry throws(ArchiveError) in try reader.span(of: entry, fileIndex: fileIndex)
            }
            #expect(groups.count == 1)
            #expect(groups.first?.members.map(\.entry.path) == ["src/f4.bin", "src/f7.bin", "src/f9.bin"])
        }

        @Test func membersInBlocksApartAreDecodedApartAndOverlapsAreNotMerged() async throws {
            let dir = try TemporaryDirectory()
            try await offPool {
                for index in 0..<6 { try dir.file("src/f\(index).bin", sampleBytes(count: 300_000, seed: UInt64(index), text: false)) }
            }
            var options = PackOptions()
            options.preset = 0
            options.chunkSize = 1 << 20
            let archive = dir.path + "/many.tar.xz"
            _ = try await ArchivePacker.pack([PackSource(path: dir.path + "/src")], to: .file(archive), options: options)
            let reader = try await ArchiveReader.open(path: archive)
            let entries = try await reader.entries().filter { $0.kind == .regular }.sorted { $0.headerOffset < $1.headerOffset }
            let fileIndex = try #require(reader.fileIndex)
            let groups = try SelectiveExtraction.groups([entries[0], entries[5]]) { entry throws(ArchiveError) in
                try reader.span(of: entry, fileIndex: fileIndex)
            }
            #expect(groups.count == 2, "the blocks between are not decoded")
            var extract = ExtractOptions()
            extract.members = [entries[0].path, entries[1].path, entries[5].path]
            let before = reader.blockDecodeCount
            try await reader.extract(to: dir.path + "/out", options: extract)
            let spanned = Set(
                [entries[0], entries[1], entries[5]].flatMap { entry in
                    (try? reader.span(of: entry, fileIndex: fileIndex)).map { Array($0.blocks) } ?? []
                })
            #expect(reader.blockDecodeCount - before == spanned.count, "each spanned block decoded once")
            for entry in [entries[0], entries[1], entries[5]] {
                #expect(try await readBytes(dir.path + "/out/" + entry.path).count == 300_000)
            }
        }
    }
}
