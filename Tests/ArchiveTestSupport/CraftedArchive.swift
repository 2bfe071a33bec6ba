import Foundation
public import IndexedArchive
import Tar
import XZ

/// A block as it will sit in a crafted archive, and the uncompressed size the xz Index will give
/// it (which a test may make a lie).
public struct CraftedBlock: Sendable {
    public var bytes: [UInt8]
    public var unpaddedSize: UInt64
    public var indexedSize: UInt64

    public init(bytes: [UInt8], unpaddedSize: UInt64, indexedSize: UInt64) {
        self.bytes = bytes
        self.unpaddedSize = unpaddedSize
        self.indexedSize = indexedSize
    }
}

/// Hostile archives whose every layer is consistent where the test wants it: valid block checks,
/// a valid xz Index, an AMKINDEX and a pixz index that agree with them. Built by hand from the XZ
/// module's pieces, because our writer never makes them. Shared by the test targets that need
/// them (IndexedArchiveTests, amkTests).
public enum Craft {
    /// `payload` compressed as our writer would, the header carrying both sizes.
    public static func block(_ payload: [UInt8]) throws -> CraftedBlock {
        let encoder = try BlockEncoder(preset: 0, maxChunkSize: max(payload.count, 1))
        let block = try payload.withUnsafeBytes { try encoder.encode($0) }
        return CraftedBlock(bytes: block.bytes, unpaddedSize: block.unpaddedSize, indexedSize: block.uncompressedSize)
    }

    public static func vli(_ value: UInt64) -> [UInt8] {
        var out: [UInt8] = []
        var v = value
        while v >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
        return out
    }

    public static func le<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        withUnsafeBytes(of: value.littleEndian) { Array($0) }
    }

    /// A Block Header with one LZMA2 filter (256 KiB dictionary) and the sizes given, if any.
    public static func blockHeader(compressedSize: UInt64?, uncompressedSize: UInt64?) -> [UInt8] {
        let flags = UInt8((compressedSize == nil ? 0 : 0x40) | (uncompressedSize == nil ? 0 : 0x80))
        var header: [UInt8] = [0, flags]
        if let compressedSize { header += vli(compressedSize) }
        if let uncompressedSize { header += vli(uncompressedSize) }
        header += [0x21, 0x01, 0x0C]
        while header.count % 4 != 0 { header.append(0) }
        header[0] = UInt8(header.count / 4)  // (size + 4-byte CRC32) / 4 - 1
        return header + le(CRC.crc32(header))
    }

    /// A block of `header`, LZMA2 `data`, padding and the CRC64 `check`.
    public static func block(header: [UInt8], data: [UInt8], check: UInt64, indexedSize: UInt64) -> CraftedBlock {
        var bytes = header + data
        let unpadded = UInt64(bytes.count + 8)
        while bytes.count % 4 != 0 { bytes.append(0) }
        bytes += le(check)
        return CraftedBlock(bytes: bytes, unpaddedSize: unpadded, indexedSize: indexedSize)
    }

    /// `block` with its header replaced by one that declares no sizes (as single-threaded xz
    /// writes them), so nothing in the block contradicts what the xz Index says.
    public static func withoutSizes(_ block: CraftedBlock) throws -> CraftedBlock {
        let info = try block.bytes.withUnsafeBytes { try BlockHeaderInfo.parse($0, check: .crc64) }
        let header = blockHeader(compressedSize: nil, uncompressedSize: nil)
        let rest = Array(block.bytes[info.headerSize...])
        let unpadded = block.unpaddedSize - UInt64(info.headerSize) + UInt64(header.count)
        return CraftedBlock(bytes: header + rest, unpaddedSize: unpadded, indexedSize: block.indexedSize)
    }

    /// One LZMA2 chunk holding `payload` (at most ``zeroChunkSize``), without the end-of-data byte. Its
    /// control byte resets the dictionary and the state, so copies of it may follow each other.
    public static func lzma2Chunk(_ payload: [UInt8]) throws -> [UInt8] {
        let encoded = try block(payload)
        let info = try encoded.bytes.withUnsafeBytes { try BlockHeaderInfo.parse($0, check: .crc64) }
        let data = Array(encoded.bytes[info.headerSize..<info.headerSize + Int(info.compressedSize!)])
        let packed = (Int(data[3]) << 8 | Int(data[4])) + 1
        precondition(data[0] >= 0xE0 && data.last == 0 && 6 + packed == data.count - 1, "not a single LZMA2 chunk")
        return Array(data.dropLast())
    }

    /// CRC64 of `count` zero bytes after `previous`.
    public static func crc64OfZeros(_ count: UInt64, previous: UInt64 = 0) -> UInt64 {
        let zeros = [UInt8](repeating: 0, count: 2 << 20)
        var crc = previous
        var left = count
        while left > 0 {
            let n = Int(min(left, UInt64(zeros.count)))
            crc = zeros.withUnsafeBytes { CRC.crc64(UnsafeRawBufferPointer(rebasing: $0[..<n]), previous: crc) }
            left -= UInt64(n)
        }
        return crc
    }

    /// Uncompressed bytes per chunk of ``zeroBlock(chunks:prefix:)``: LZMA2 chunks hold up to
    /// 2 MiB, but liblzma's encoder ends one a little short of that.
    public static let zeroChunkSize = 1 << 20

    /// A block of `prefix` then zeros, `chunks` × 1 MiB in all, from about 150 bytes per chunk.
    public static func zeroBlock(chunks: Int, prefix: [UInt8] = []) throws -> CraftedBlock {
        let chunkSize = zeroChunkSize
        let zeroChunk = try lzma2Chunk([UInt8](repeating: 0, count: chunkSize))
        var data = prefix.isEmpty ? zeroChunk : try lzma2Chunk(prefix + [UInt8](repeating: 0, count: chunkSize - prefix.count))
        for _ in 1..<chunks { data += zeroChunk }
        data.append(0)
        let size = UInt64(chunks) * UInt64(chunkSize)
        let crc = crc64OfZeros(size - UInt64(prefix.count), previous: CRC.crc64(prefix))
        return block(
            header: blockHeader(compressedSize: UInt64(data.count), uncompressedSize: size),
            data: data, check: crc, indexedSize: size)
    }

    /// The pixz index of `entries`.
    public static func pixzIndex(_ entries: [ArchiveEntry], tarSize: UInt64) -> [UInt8] {
        var pixz: [UInt8] = [0xa6, 0x4c, 0x32, 0x2e, 0xd6, 0x14, 0xae, 0xdb]
        for entry in entries {
            pixz += Array(entry.path.utf8) + [0] + le(entry.headerOffset)
        }
        return pixz + [0] + le(tarSize)
    }

    /// An archive in our layout: `dataBlocks`, then the rich index (`richIndex`, or the encoding
    /// of `entries`), the pixz index, the xz Index (with each block's `indexedSize`) and the footer.
    public static func archive(
        dataBlocks: [CraftedBlock], entries: [ArchiveEntry], tarSize: UInt64,
        richIndex: CraftedBlock? = nil
    ) throws -> [UInt8] {
        let rich =
            try richIndex
            ?? block(
                ArchiveIndex(
                    entries: entries, tarSize: tarSize, chunkSize: 1 << 20,
                    metadata: ["writer": "crafted"]
                ).encoded())
        var out = StreamHeader.encode(check: .crc64)
        var index = XZIndexBuilder()
        let pixz = try block(pixzIndex(entries, tarSize: tarSize))
        for crafted in dataBlocks + [rich, pixz] {
            out += crafted.bytes
            try index.append(unpaddedSize: crafted.unpaddedSize, uncompressedSize: crafted.indexedSize)
        }
        let encodedIndex = index.encoded()
        out += encodedIndex
        out += StreamFooter.encode(check: .crc64, indexSize: UInt64(encodedIndex.count))
        return out
    }

    /// The index entries of a tar stream, as our writer would record them.
    public static func indexEntries(of tar: [UInt8]) throws -> [ArchiveEntry] {
        var parser = TarParser()
        var entries: [ArchiveEntry] = []
        var crc: UInt64 = 0
        try tar.withUnsafeBytes { raw in
            try parser.consume(raw) { event in
                switch event {
                case .member(let member):
                    let h = member.header
                    crc = 0
                    entries.append(
                        ArchiveEntry(
                            path: h.path, kind: h.kind, size: h.size, mode: h.mode, uid: h.uid, gid: h.gid,
                            mtime: h.mtime, linkTarget: h.linkTarget, headerOffset: member.headerOffset,
                            dataOffset: member.dataOffset, checksum: h.kind == .regular ? 0 : nil,
                            hasPaxHeader: member.hasPaxHeader))
                case .data(let bytes, _):
                    crc = CRC.crc64(bytes, previous: crc)
                case .memberEnd:
                    if entries[entries.count - 1].kind == .regular { entries[entries.count - 1].checksum = crc }
                default:
                    break
                }
            }
        }
        return entries
    }
}
