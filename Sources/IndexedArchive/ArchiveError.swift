/// What went wrong while packing, reading or extracting an archive, and where.
///
/// Every failure names its place: the file on disk (`path`), the archive member (`member`), or the
/// byte offset in the archive (`offset`), so a user can find the culprit without a debugger.
public struct ArchiveError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure; `code` is stable for programs, `message` is for people.
    public enum Code: Sendable, Equatable {
        /// A system call failed; the errno is kept.
        case io(errno: Int32)
        /// A file changed size while it was read.
        case changedWhileReading
        /// An archive path is empty, absolute, or has `..` or empty components.
        case invalidArchivePath
        /// The file is not an archive this reader understands.
        case notAnArchive
        /// The archive is damaged: a bad block, index, header or checksum.
        case corrupt
        /// The archive's index has a version this reader does not know.
        case unsupportedVersion
        /// Extraction refused a member that would write outside the destination.
        case unsafePath
        /// A configured limit (entries, bytes, index size) was reached.
        case limitExceeded
        /// No member has the requested path.
        case memberNotFound
        /// A member's content does not match the checksum in the index.
        case checksumMismatch
        /// A stage made no progress for longer than its stall timeout.
        case stalled
        /// Work was cancelled but did not stop within the grace period and was abandoned.
        case terminated
        /// The options given are not usable.
        case invalidOptions
    }

    /// What went wrong, for programs to switch on.
    public var code: Code
    /// What went wrong, for people.
    public var message: String
    /// The file on disk concerned, if any.
    public var path: String?
    /// The archive member concerned, if any.
    public var member: String?
    /// The byte offset in the archive (compressed file, or tar stream when `member` is set), if any.
    public var offset: UInt64?
    /// The error of a lower layer this one stands for, kept whole (an `XZError` from the codec, a
    /// `TarError` from the parser) so a program can look at its own code and offset rather than
    /// parse ``message``. System call failures keep their errno in ``code`` (`.io(errno:)`).
    public var underlying: (any Error)?

    /// An error of kind `code`, with where it happened when that is known.
    public init(
        _ code: Code, _ message: String, path: String? = nil, member: String? = nil, offset: UInt64? = nil,
        underlying: (any Error)? = nil
    ) {
        self.code = code
        self.message = message
        self.path = path
        self.member = member
        self.offset = offset
        self.underlying = underlying
    }

    /// One line for a person, safe to print on a terminal.
    ///
    /// The path and the member name come from the archive or the command line, and messages
    /// quote link targets and names from the archive: all of it is passed through
    /// ``TerminalSafe`` here, so that every caller that prints an error is safe from an archive
    /// whose names hold escape sequences or newlines. The stored fields stay raw, for programs.
    public var description: String {
        var place: [String] = []
        if let path { place.append(TerminalSafe.name(path)) }
        if let member { place.append("member '\(TerminalSafe.name(member))'") }
        if let offset { place.append("offset \(offset)") }
        let message = TerminalSafe.message(message)
        return place.isEmpty ? message : "\(place.joined(separator: ", ")): \(message)"
    }
}
