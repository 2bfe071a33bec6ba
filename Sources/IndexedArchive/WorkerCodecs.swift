import XZ

/// The codecs one thread of a ``WorkerThreadPool`` keeps from one job to the next.
///
/// An LZMA encoder at preset 6 holds about 74 MiB of match-finder state (94 MiB with xz's 8 MiB
/// dictionary) and a decoder its dictionary: made once per thread and reused for every block,
/// they cost one allocation per thread instead of one per block. Each thread of a pool owns one
/// `WorkerCodecs` and hands it only to the jobs it runs, one at a time, so it never crosses
/// threads and needs no lock (which is why it is not `Sendable`).
package final class WorkerCodecs {
    private struct EncoderSettings: Hashable {
        var preset: Int
        var extreme: Bool
        var maxChunkSize: Int
        var niceLength: Int?
        var dictionarySize: Int?
    }

    private var encoders: [EncoderSettings: BlockEncoder] = [:]
    private var decoders: [UInt64: BlockDecoder] = [:]

    init() {}

    /// This thread's encoder for these settings, made on first use.
    ///
    /// - Throws: `XZError` `.options` for settings liblzma refuses, `.memory` when it cannot
    ///   allocate the match finder.
    func encoder(preset: Int, extreme: Bool, maxChunkSize: Int, niceLength: Int? = nil, dictionarySize: Int? = nil) throws -> BlockEncoder {
        let settings = EncoderSettings(
            preset: preset, extreme: extreme, maxChunkSize: maxChunkSize, niceLength: niceLength, dictionarySize: dictionarySize)
        if let encoder = encoders[settings] { return encoder }
        let encoder = try BlockEncoder(
            preset: preset, extreme: extreme, maxChunkSize: maxChunkSize, niceLength: niceLength, dictionarySize: dictionarySize)
        encoders[settings] = encoder
        return encoder
    }

    /// This thread's decoder for this memory limit, made on first use.
    func decoder(memoryLimit: UInt64) -> BlockDecoder {
        if let decoder = decoders[memoryLimit] { return decoder }
        let decoder = BlockDecoder(memoryLimit: memoryLimit)
        decoders[memoryLimit] = decoder
        return decoder
    }

    /// How many codecs this thread holds (for the tests).
    var count: Int { encoders.count + decoders.count }
}
