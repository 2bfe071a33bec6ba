/// A pack's progress in content bytes: the bytes of the members stored, shown only as far as the
/// blocks already written cover them.
///
/// A member counts as stored as soon as it is serialised, and the pipeline holds chunks ahead of
/// the writer (two per compressor), so counted alone a small pack would sit at 100% while it
/// compresses, which is most of its time. Capped by the tar bytes of the blocks written (block
/// `sequence` written means `sequence + 1` chunks), the count follows the compression, the slow
/// part. Both `amk pack`'s bar and ``PackOptions/progress`` count this way.
struct StoredProgress: Sendable, Equatable {
    /// The tar bytes of one chunk.
    let chunkSize: UInt64
    /// Content bytes of the members serialised so far.
    private(set) var stored: UInt64 = 0
    /// Tar bytes of the blocks written so far (at most: the last chunk may be short).
    private(set) var written: UInt64 = 0

    init(chunkSize: Int) {
        self.chunkSize = UInt64(chunkSize)
    }

    /// What to show: the stored bytes the written blocks cover.
    var shown: UInt64 { min(stored, written) }

    /// A member of `bytes` content bytes was serialised.
    mutating func store(_ bytes: UInt64) {
        stored += bytes
    }

    /// Block `sequence` was written (blocks are written in order; a late report changes nothing).
    mutating func blockWritten(sequence: Int) {
        written = max(written, UInt64(sequence + 1) * chunkSize)
    }
}
