import Tar
import TestSupport
import Testing

@testable import IndexedArchive

extension EngineSuites {
    /// Chunks that are mostly machine code go through the x86 branch filter (issue #12).
    @Suite(.background) struct TarSerializerCodeTests {
        static let mib = 1 << 20

        /// Members of `sizes` bytes, those whose flag is set marked as code; returns the chunks
        /// and the stream ranges of the code members' content.
        static func serialize(_ members: [(size: Int, code: Bool)], chunkSize: Int, workers: Int) throws
            -> (chunks: [Chunk], code: [Range<Int>])
        {
            var serializer = TarSerializer(chunkSize: chunkSize, workers: workers)
            var ready: [Chunk] = []
            var code: [Range<Int>] = []
            for (number, member) in members.enumerated() {
                let header = TarHeader(
                    path: "m\(number)", kind: .regular, size: UInt64(member.size), mode: 0o755, uid: 0, gid: 0,
                    mtime: TarTimestamp(seconds: 1_700_000_000))
                try serializer.beginMember(header, into: &ready)
                let start = Int(serializer.position)
                if member.code { serializer.markContentAsCode() }
                serializer.append(sampleBytes(count: member.size, seed: UInt64(number), text: true), into: &ready)
                if member.code { code.append(start..<Int(serializer.position)) }
                serializer.endMember(checksum: 0, into: &ready)
            }
            _ = serializer.finish(into: &ready)
            return (ready, code)
        }

        @Test func aChunkIsFilteredWhenAtLeastHalfOfItIsCode() throws {
            let chunkSize = 2 * Self.mib
            let members: [(size: Int, code: Bool)] = [
                (3 * Self.mib, false), (5 * Self.mib + 300_000, true), (700_000, false), (1_200_000, true), (4 * Self.mib, false),
                (900_000, true), (100_000, false)
            ]
            let (chunks, code) = try Self.serialize(members, chunkSize: chunkSize, workers: 1)
            #expect(chunks.map(\.sequence) == Array(0..<chunks.count))
            var start = 0
            var filtered = 0
            for chunk in chunks {
                let range = start..<start + chunk.bytes.count
                let inCode = code.reduce(0) { $0 + $1.clamped(to: range).count }
                #expect(
                    (chunk.branch == .x86) == (inCode * 2 >= range.count),
                    "chunk \(chunk.sequence) at \(start): \(inCode) of \(range.count) bytes are code, filter \(String(describing: chunk.branch))"
                )
                if chunk.branch != nil { filtered += 1 }
                start = range.upperBound
            }
            #expect(filtered >= 3 && filtered < chunks.count, "some chunks filtered, not all: \(chunks.map(\.branch))")
        }

        @Test func theFinalStretchsPiecesKeepTheirChunksFilter() throws {
            let chunkSize = 4 * Self.mib
            let (chunks, _) = try Self.serialize([(Self.mib, false), (9 * Self.mib, true)], chunkSize: chunkSize, workers: 2)
            #expect(chunks.count > 3, "the tail was cut: \(chunks.map(\.bytes.count))")
            #expect(chunks.dropFirst().allSatisfy { $0.branch == .x86 }, "\(chunks.map(\.branch))")
            let (text, _) = try Self.serialize([(10 * Self.mib, false)], chunkSize: chunkSize, workers: 2)
            #expect(text.allSatisfy { $0.branch == nil })
        }

        @Test func theMarkEndsWithTheMember() throws {
            // One code member followed by enough text to fill the rest of its chunk and the next.
            let (chunks, _) = try Self.serialize([(Self.mib, true), (3 * Self.mib, false)], chunkSize: 2 * Self.mib, workers: 1)
            #expect(chunks.first?.branch == .x86, "\(chunks.map(\.branch))")
            #expect(chunks.count == 3 && chunks.dropFirst().allSatisfy { $0.branch == nil }, "\(chunks.map(\.branch))")
        }
    }
}
