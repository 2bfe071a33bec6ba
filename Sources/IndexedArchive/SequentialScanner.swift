import Foundation
import XZ

/// Reads a file from its start through one streaming decoder: for a file whose xz Index cannot be
/// read (a truncated or damaged end, or a tail that is not xz), where the blocks cannot be found
/// ahead, and for the short reads that stop early (the metadata in the first pax header, a member
/// near the start of a foreign archive).
enum SequentialScanner {
    /// Reads `file` from the start through one streaming decoder into `consumer`, a piece at a
    /// time, until the end or until `until` says the consumer has what it wanted. It reads and
    /// writes files: call it inside a job on a thread of our own (the consumer stays on it), which
    /// `flag` stops between pieces.
    static func decode(
        _ file: ArchiveFile, maxDecoderMemory: UInt64, into consumer: inout TarConsumer, flag: CancellationFlag,
        until: ((TarConsumer) -> Bool)? = nil
    ) throws {
        let decoder = StreamDecoder(memoryLimit: maxDecoderMemory)
        var offset: UInt64 = 0
        let piece = 1 << 20
        while offset < file.size {
            if flag.isCancelled { throw CancellationError() }
            let bytes = try file.readAvailable(at: offset, count: piece)
            do {
                try bytes.withUnsafeBytes { raw in
                    try decoder.feed(raw) { out in try consumer.consume(out, verifiedThrough: decoder.verifiedOutput) }
                }
            } catch let error as XZError {
                throw ArchiveError(
                    error.code == .memoryLimit ? .limitExceeded : .corrupt, AddressSpace.explained(error),
                    path: file.path, offset: error.offset ?? offset, underlying: error)
            }
            if until?(consumer) == true { return }
            offset += UInt64(piece)
        }
        do {
            try decoder.finish { out in try consumer.consume(out, verifiedThrough: decoder.verifiedOutput) }
        } catch let error as XZError {
            throw ArchiveError(.corrupt, error.message, path: file.path, offset: error.offset ?? file.size, underlying: error)
        }
    }
}
