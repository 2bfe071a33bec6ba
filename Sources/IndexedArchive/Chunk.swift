import XZ

/// `chunkSize` bytes of the tar stream (fewer for the last), numbered in stream order so that the
/// writer can put compressed blocks back in order whatever order the workers finish in.
struct Chunk: Sendable {
    var sequence: Int
    var bytes: [UInt8]
    /// Members classified as incompressible, gathered apart: stored without trying LZMA.
    var stored = false
    /// Mostly x86 machine code: compressed through the x86 branch filter.
    var branch: BranchFilter? = nil
}
