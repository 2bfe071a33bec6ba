import Foundation
import XZ

/// Reads a file from its start through one streaming decoder: for a file whose xz Index cannot be
/// read (a truncated or damaged end, or a tail that is not xz), where the blocks cannot be found
/// ahead, and for the short reads that stop early (the metadata in the first pax header, a member
/// near the start of a foreign archive).
enum SequentialScanner {
    /// Reads `file` from the start through one streaming decoder into `box`, each piece on `io`,
    /// until the end or until `until` says the consumer has what it wanted.
    static func decode(
        _ file: ArchiveFile, maxDecoderMemory: UInt64, into box: ConsumerBox, on io: WorkerThreadPool,
        until: (@Sendable (TarConsumer) -> Bool)? = nil
    ) async throws {
        box.state.withLock { $0.decoder = StreamDecoder(memoryLimit: maxDecoderMemory) }
        var offset: UInt64 = 0
        let piece = 1 << 20
        while offset < file.size {
            try Task.checkCancellation()
            let at = offset
            let stop = try await io.run { _ -> Bool in
                let bytes = try file.readAvailable(at: at, count: piece)
                return try box.state.withLock { state -> Bool in
                    do {
                        try bytes.withUnsafeBytes { raw in
                            try state.decoder!.feed(raw) { out in try state.consumer.consume(out) }
                        }
                    } catch let error as XZError {
                        throw ArchiveError(
                            error.code == .memoryLimit ? .limitExceeded : .corrupt, error.message,
                            path: file.path, offset: error.offset ?? at, underlying: error)
                    }
                    return until?(state.consumer) ?? false
                }
            }
            if stop { return }
            offset += UInt64(piece)
        }
        try await io.run { _ in
            try box.state.withLock { state in
                do {
                    try state.decoder!.finish { out in try state.consumer.consume(out) }
                } catch let error as XZError {
                    throw ArchiveError(.corrupt, error.message, path: file.path, offset: error.offset ?? file.size, underlying: error)
                }
            }
        }
    }
}
