/// A member as ``TarParser`` reports it: its decoded metadata and where it lives in the stream.
public struct TarMember: Sendable, Equatable {
    /// The member's metadata, with pax and GNU long-name overrides already applied.
    public var header: TarHeader
    /// The offset of the member's first header block: its pax `x` or GNU `L`/`K` header when
    /// it has one, otherwise its ustar header. This is where extraction of the member starts.
    public var headerOffset: UInt64
    /// The offset of the first content byte, which is also the end of its header blocks.
    public var dataOffset: UInt64
    /// Whether a pax `x` header preceded the ustar header.
    public var hasPaxHeader: Bool

    /// Creates a member description.
    public init(header: TarHeader, headerOffset: UInt64, dataOffset: UInt64, hasPaxHeader: Bool) {
        self.header = header
        self.headerOffset = headerOffset
        self.dataOffset = dataOffset
        self.hasPaxHeader = hasPaxHeader
    }
}
