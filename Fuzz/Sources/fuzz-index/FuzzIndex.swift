import Foundation
import FuzzSupport
import IndexedArchive
import Tar
import XZ

/// The rich index's fuzz body: the input is an index block payload (`AMKINDEX...`).
///
/// It is decoded on its own with `ArchiveIndex.decode`, then, when it has the magic, placed as
/// the index block of an otherwise valid archive around a fixed tar stream, whose paths are read
/// alone (``ArchiveReader/memberPaths(path:maxIndexBytes:maxEntries:maxBufferedBlockSize:maxDecoderMemory:)``)
/// and which is opened with ``ArchiveReader`` and listed, verified and read member by member. Mutating a whole `.tar.xz`
/// rarely gets past the CRC64 of the block holding the index; this target gives the reader a
/// well-framed archive whose index lies, so random access driven by hostile offsets, sizes and
/// chunk sizes is what gets fuzzed. Errors are ignored; only a crash counts.
enum FuzzIndex {
    /// Data blocks hold this many tar bytes, so members span blocks.
    static let chunk = 2048

    /// A directory, files of 0, 700 and 5000 bytes, a symbolic link and a pax member.
    static let tar: [UInt8] = {
        let members: [(TarHeader, Int)] = [
            (TarHeader(path: "d/", kind: .directory, mode: 0o755), 0),
            (TarHeader(path: "d/empty", kind: .regular), 0),
            (TarHeader(path: "d/small", kind: .regular, size: 700), 700),
            (TarHeader(path: "d/" + String(repeating: "long", count: 40), kind: .regular, size: 5000), 5000),
            (TarHeader(path: "d/link", kind: .symbolicLink, mode: 0o777, linkTarget: "small"), 0),
        ]
        var out: [UInt8] = []
        for (header, size) in members {
            out += try! TarEncoder.encode(header)
            out += (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
            out += [UInt8](repeating: 0, count: TarEncoder.padding(forContentSize: UInt64(size)))
        }
        return out + TarEncoder.endOfArchive
    }()

    /// The archive up to the index block (stream header, data blocks), the xz Index records so
    /// far, and the encoded pixz index block that follows the rich index.
    static let frame: (head: [UInt8], index: XZIndexBuilder, pixz: EncodedBlock) = {
        let encoder = try! BlockEncoder(preset: 0, maxChunkSize: max(chunk, 1 << 16))
        var head = StreamHeader.encode(check: .crc64)
        var index = XZIndexBuilder()
        var start = 0
        while start < tar.count {
            let block = try! tar[start..<min(tar.count, start + chunk)].withUnsafeBytes { try encoder.encode($0) }
            head += block.bytes
            try! index.append(unpaddedSize: block.unpaddedSize, uncompressedSize: block.uncompressedSize)
            start += chunk
        }
        var pixz: [UInt8] = [0xA6, 0x4C, 0x32, 0x2E, 0xD6, 0x14, 0xAE, 0xDB]
        for entry in entries {
            pixz += Array(entry.path.utf8) + [0]
            withUnsafeBytes(of: entry.headerOffset.littleEndian) { pixz += $0 }
        }
        pixz += [0]
        withUnsafeBytes(of: UInt64(tar.count).littleEndian) { pixz += $0 }
        return (head, index, try! pixz.withUnsafeBytes { try encoder.encode($0) })
    }()

    /// The fixed tar's members as our writer would index them.
    static let entries: [ArchiveEntry] = {
        var parser = TarParser()
        var entries: [ArchiveEntry] = []
        var crc: UInt64 = 0
        try! tar.withUnsafeBytes { raw in
            try parser.consume(raw) { event in
                switch event {
                case .member(let member):
                    let h = member.header
                    crc = 0
                    entries.append(ArchiveEntry(
                        path: h.path, kind: h.kind, size: h.size, mode: h.mode, uid: h.uid, gid: h.gid, mtime: h.mtime,
                        linkTarget: h.linkTarget, headerOffset: member.headerOffset, dataOffset: member.dataOffset,
                        checksum: h.kind == .regular ? 0 : nil, hasPaxHeader: member.hasPaxHeader))
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
    }()

    /// Seeds: the true index of the fixed tar, and one with metadata, in the current layout
    /// (version 2). The corpus also keeps the same two in version 1's layout, as written before.
    static var seeds: [String: [UInt8]] {
        [
            "valid.bin": ArchiveIndex(entries: entries, tarSize: UInt64(tar.count), chunkSize: UInt64(chunk), metadata: [:]).encoded(),
            "valid-metadata.bin": ArchiveIndex(entries: entries, tarSize: UInt64(tar.count), chunkSize: UInt64(chunk),
                                               metadata: ["writer": "fuzz", "resourcesVersion": "7"]).encoded(),
        ]
    }

    static let scratch = NSTemporaryDirectory() + "amk-fuzz-index-\(getpid()).bin"

    static func run(_ input: UnsafeRawBufferPointer) {
        let payload = Array(input)
        _ = try? ArchiveIndex.decode(payload, maxEntries: 100_000)
        guard ArchiveIndex.hasMagic(payload) else { return }

        let encoder = try! BlockEncoder(preset: 0, maxChunkSize: max(payload.count, 1 << 16))
        let block = try! payload.withUnsafeBytes { try encoder.encode($0) }
        var index = frame.index
        var file = frame.head + block.bytes + frame.pixz.bytes
        try! index.append(unpaddedSize: block.unpaddedSize, uncompressedSize: block.uncompressedSize)
        try! index.append(unpaddedSize: frame.pixz.unpaddedSize, uncompressedSize: frame.pixz.uncompressedSize)
        let encodedIndex = index.encoded()
        file += encodedIndex
        file += StreamFooter.encode(check: .crc64, indexSize: UInt64(encodedIndex.count))
        guard FileManager.default.createFile(atPath: scratch, contents: Data(file)) else {
            fatalError("cannot write \(scratch)")
        }

        let path = scratch
        Blocking.run {
            _ = try? await ArchiveReader.memberPaths(path: path, maxEntries: 100_000)
            guard let reader = try? ArchiveReader(path: path, maxEntries: 100_000) else { return }
            let listed = (try? await reader.entries()) ?? []
            _ = try? await reader.info()
            _ = try? await reader.verify()
            for entry in listed.prefix(8) where entry.kind == .regular {
                _ = try? await reader.contents(of: entry.path, maxBytes: 1 << 20)
            }
        }
    }
}
