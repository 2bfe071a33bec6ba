/// A failure to encode or decode tar data.
///
/// Decoding errors carry the stream offset of the header block concerned, so that a damaged
/// archive can be reported as "which member, where" rather than just "bad input".
public struct TarError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of problem was found.
    public enum Code: Sendable, Equatable {
        /// The header checksum does not match its contents.
        case badChecksum
        /// A ustar header field is malformed (for example, a size that is not octal).
        case badField
        /// A pax extended-header record is malformed or has an invalid value.
        case badPaxRecord
        /// A declared size exceeds a configured limit or the range the format can address.
        case tooLarge
        /// The stream ended inside a member or before the end-of-archive marker.
        case truncated
        /// The input uses a feature this implementation does not handle (such as sparse files).
        /// The archive may be perfectly sound; the message starts with "unsupported:".
        case unsupported
        /// The data is not a tar stream at all (empty, or its first header block has neither a
        /// valid checksum nor the ustar magic), as when a text file or random bytes were
        /// compressed. Distinct from damage so the user is told to look at what was given, not
        /// for corruption; the message starts with "not a tar stream:".
        case notATarStream
        /// A value given to the encoder cannot be represented.
        case invalidValue
    }

    /// What kind of problem was found.
    public var code: Code
    /// What was wrong, naming the field or keyword concerned.
    public var message: String
    /// The offset in the tar stream of the header block concerned, when there is one.
    public var offset: UInt64?

    /// Creates an error.
    public init(code: Code, message: String, offset: UInt64? = nil) {
        self.code = code
        self.message = message
        self.offset = offset
    }

    /// The message, prefixed with the offset of the header block when known, for example
    /// `tar header at offset 1536: checksum mismatch (stored 01234, computed 01235)`.
    public var description: String {
        if let offset {
            return "tar header at offset \(offset): \(message)"
        }
        return "tar: \(message)"
    }
}
