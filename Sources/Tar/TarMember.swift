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
    /// Whether the member is sparse: the stream stores only runs of its content, from
    /// ``dataOffset`` on, and the parser hands on the holes between them as
    /// ``TarParser/Event/hole(length:)``. `header.size` is then the file's size, not the bytes
    /// stored, so the content does not lie at `dataOffset ..< dataOffset + header.size`: an index
    /// that locates content by offset cannot describe such a member.
    public var isSparse: Bool

    /// Creates a member description.
    public init(header: TarHeader, headerOffset: UInt64, dataOffset: UInt64, hasPaxHeader: Bool, isSparse: Bool = false) {
        self.header = header
        self.headerOffset = headerOffset
        self.dataOffset = dataOffset
        self.hasPaxHeader = hasPaxHeader
        self.isSparse = isSparse
    }
}
