/// Builds the xz Index of the stream being written, one record per block in block order.
///
/// It keeps the records already encoded (a few bytes per block), so an index of millions of
/// blocks stays small, and ``encoded()`` is a concatenation plus a CRC32.
public struct XZIndexBuilder: Sendable {
    /// Smallest Unpadded Size a block can have: a minimal header, one data byte, no check.
    static let minimumUnpaddedSize: UInt64 = 5
    /// Largest xz Index the Stream Footer's Backward Size can express.
    static let maximumIndexSize: UInt64 = 1 << 34

    private var records: [UInt8] = []
    private var blocksSize: UInt64 = 0

    /// Number of blocks appended so far.
    public private(set) var blockCount: Int = 0
    /// Sum of the uncompressed sizes of the blocks appended so far.
    public private(set) var uncompressedSize: UInt64 = 0

    /// Creates an empty index.
    public init() {}

    /// Records the next block.
    ///
    /// - Parameters:
    ///   - unpaddedSize: the block's ``EncodedBlock/unpaddedSize``.
    ///   - uncompressedSize: the block's ``EncodedBlock/uncompressedSize``.
    /// - Throws: `XZError` `.program` for sizes no block can have; `.data` when the stream
    ///   would grow past the limits of the xz format.
    public mutating func append(unpaddedSize: UInt64, uncompressedSize: UInt64) throws {
        guard unpaddedSize >= Self.minimumUnpaddedSize, unpaddedSize <= VLI.max & ~3 else {
            throw XZError(code: .program, message: "unpadded size \(unpaddedSize) is impossible for an xz block")
        }
        guard uncompressedSize <= VLI.max else {
            throw XZError(code: .program, message: "uncompressed size \(uncompressedSize) is larger than the xz format allows")
        }
        let totalSize = (unpaddedSize + 3) & ~3
        let (newBlocksSize, blocksOverflow) = blocksSize.addingReportingOverflow(totalSize)
        let (newUncompressed, uncompressedOverflow) = self.uncompressedSize.addingReportingOverflow(uncompressedSize)
        guard !blocksOverflow, !uncompressedOverflow, newBlocksSize <= VLI.max, newUncompressed <= VLI.max else {
            throw XZError(code: .data, message: "stream would exceed the 2^63-byte size limit of the xz format")
        }
        var record: [UInt8] = []
        VLI.append(unpaddedSize, to: &record)
        VLI.append(uncompressedSize, to: &record)
        guard Self.encodedSize(records: records.count + record.count, count: blockCount + 1) <= Self.maximumIndexSize else {
            throw XZError(code: .data, message: "xz Index would exceed the 16 GiB the stream footer can describe")
        }
        records += record
        blocksSize = newBlocksSize
        self.uncompressedSize = newUncompressed
        blockCount += 1
    }

    /// Size of an encoded index with `records` bytes of records for `count` blocks.
    static func encodedSize(records: Int, count: Int) -> UInt64 {
        var countBytes: [UInt8] = []
        VLI.append(UInt64(count), to: &countBytes)
        let unpadded = UInt64(1 + countBytes.count + records)
        return ((unpadded + 3) & ~3) + 4
    }

    /// The encoded Index field: indicator, record count, records, padding and CRC32.
    public func encoded() -> [UInt8] {
        var out: [UInt8] = [0x00]
        out.reserveCapacity(Int(Self.encodedSize(records: records.count, count: blockCount)))
        VLI.append(UInt64(blockCount), to: &out)
        out += records
        while out.count % 4 != 0 { out.append(0) }
        let crc = CRC.crc32(out)
        out += withUnsafeBytes(of: crc.littleEndian, Array.init)
        return out
    }
}
