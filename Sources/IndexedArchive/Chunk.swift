/// `chunkSize` bytes of the tar stream (fewer for the last), numbered in stream order so that the
/// writer can put compressed blocks back in order whatever order the workers finish in.
struct Chunk: Sendable {
    var sequence: Int
    var bytes: [UInt8]
}
