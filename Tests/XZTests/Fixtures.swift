import XZ

/// Assembles one .xz stream (CRC64) from encoded blocks, the way the archive writer does.
func assembleStream(_ blocks: [EncodedBlock]) throws -> [UInt8] {
    var index = XZIndexBuilder()
    var out = StreamHeader.encode(check: .crc64)
    for block in blocks {
        out += block.bytes
        try index.append(unpaddedSize: block.unpaddedSize, uncompressedSize: block.uncompressedSize)
    }
    let encodedIndex = index.encoded()
    out += encodedIndex
    out += StreamFooter.encode(check: .crc64, indexSize: UInt64(encodedIndex.count))
    return out
}

/// The largest read an index walk asked for: shows that a lying footer does not make it allocate.
final class ReadLog {
    private(set) var largest = 0
    private(set) var total = 0
    func record(_ count: Int) {
        largest = max(largest, count)
        total += count
    }
}

/// Reads an index from an in-memory file, recording the largest read it was asked for.
func readIndex(_ file: [UInt8], maxBlocks: Int = 50_000_000, largestRead: ReadLog? = nil) throws -> XZFileIndex {
    try XZFileIndex.read(fileSize: UInt64(file.count), maxBlocks: maxBlocks) { offset, count in
        largestRead?.record(count)
        guard offset <= UInt64(file.count) else { return [] }
        let start = Int(offset)
        return Array(file[start..<min(file.count, start + count)])
    }
}

/// Decodes one whole block of `file` at `record`, through the streaming API.
func decodeBlock(_ decoder: BlockDecoder, _ file: [UInt8], _ record: XZIndexRecord, check: XZCheck) throws -> [UInt8] {
    var out: [UInt8] = []
    let start = Int(record.compressedOffset)
    let end = start + Int(record.totalSize)
    _ = try file[start..<end].withUnsafeBytes { block in
        try decoder.decode(block: block, check: check, fileOffset: record.compressedOffset) { out.append(contentsOf: $0) }
    }
    return out
}
