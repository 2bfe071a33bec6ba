import CLZMA

/// What a Block Header says, read without decoding the block's data; salvage uses it to walk
/// blocks forward when the xz Index is lost.
public struct BlockHeaderInfo: Sendable, Equatable {
    /// Size of the Block Header in bytes (a multiple of four, 8...1024).
    public var headerSize: Int
    /// Size of the Compressed Data field, or nil when the header does not carry it.
    public var compressedSize: UInt64?
    /// Number of bytes the block decodes to, or nil when the header does not carry it.
    public var uncompressedSize: UInt64?
    /// The branch converter in the block's filter chain, if it has one we know.
    public var branchFilter: BranchFilter?

    /// Creates a header description.
    public init(headerSize: Int, compressedSize: UInt64?, uncompressedSize: UInt64?, branchFilter: BranchFilter? = nil) {
        self.headerSize = headerSize
        self.compressedSize = compressedSize
        self.uncompressedSize = uncompressedSize
        self.branchFilter = branchFilter
    }

    /// Total block size (header + data + padding + check) when `compressedSize` is known.
    public func totalSize(check: XZCheck) -> UInt64? {
        guard let compressedSize, compressedSize <= VLI.max else { return nil }
        return UInt64(headerSize) + ((compressedSize + 3) & ~3) + UInt64(check.size)
    }

    /// Parses the Block Header at the start of `bytes`.
    ///
    /// - Throws: `XZError` naming `fileOffset`: `.data` for the xz Index indicator (0x00) or a
    ///   corrupt header, `.truncated` when `bytes` is shorter than the header, `.options` for
    ///   unsupported filters.
    public static func parse(_ bytes: UnsafeRawBufferPointer, check: XZCheck, fileOffset: UInt64 = 0) throws -> BlockHeaderInfo {
        let options = BlockOptions()
        try options.decodeHeader(bytes, check: check, fileOffset: fileOffset)
        let block = options.block.pointee
        let unknown = amk_lzma_vli_unknown
        var branch: BranchFilter?
        for slot in 0..<BlockOptions.filterSlots {
            let id = options.filters[slot].id
            if id == unknown { break }
            if let known = BranchFilter(id: id) { branch = known }
        }
        return BlockHeaderInfo(
            headerSize: Int(block.header_size),
            compressedSize: block.compressed_size == unknown ? nil : block.compressed_size,
            uncompressedSize: block.uncompressed_size == unknown ? nil : block.uncompressed_size,
            branchFilter: branch)
    }
}
