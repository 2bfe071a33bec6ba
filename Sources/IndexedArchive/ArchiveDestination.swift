/// Where a packed archive goes.
public enum ArchiveDestination: Sendable, Hashable {
    /// A file, written atomically: the data goes to a temporary file beside it, which is synced and
    /// renamed over the path only when the archive is complete. A cancelled or failed pack leaves
    /// nothing at the path.
    case file(String)
    /// An open descriptor (a pipe, a socket, a file) written sequentially and never seeked; it is
    /// not closed. The caller owns what happens to partial output.
    case fileDescriptor(Int32)
}
