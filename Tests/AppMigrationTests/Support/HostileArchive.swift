import ArchiveTestSupport
import Foundation
import IndexedArchive
import Tar
import TestSupport
import XZ

/// Archives no exporter of ours writes, made by hand: members whose paths and links are whatever
/// the test says (the Tar module's encoder writes them as given), in our indexed layout (assembled
/// with the XZ module, as `Tests/IndexedArchiveTests/Fixture.swift` does), with an index that may
/// lie about the sizes.
enum HostileArchive {
    static let mtime = TarTimestamp(seconds: 1_700_000_000)

    static func file(_ path: String, _ text: String) -> (TarHeader, [UInt8]) {
        (TarHeader(path: path, kind: .regular, size: UInt64(text.utf8.count), mode: 0o644, mtime: mtime), Array(text.utf8))
    }

    static func directory(_ path: String) -> (TarHeader, [UInt8]) {
        (TarHeader(path: path, kind: .directory, mode: 0o755, mtime: mtime), [])
    }

    static func symlink(_ path: String, to target: String) -> (TarHeader, [UInt8]) {
        (TarHeader(path: path, kind: .symbolicLink, mode: 0o777, mtime: mtime, linkTarget: target), [])
    }

    /// A tar stream of `members`, with the end marker.
    static func tar(_ members: [(TarHeader, [UInt8])]) throws -> [UInt8] {
        var out: [UInt8] = []
        for (header, content) in members {
            out += try TarEncoder.encode(header)
            out += content
            out += [UInt8](repeating: 0, count: TarEncoder.padding(forContentSize: UInt64(content.count)))
        }
        return out + TarEncoder.endOfArchive
    }

    /// The index entries of a tar stream, as our writer would record them.
    static func entries(of tar: [UInt8]) throws -> [ArchiveEntry] {
        try Craft.indexEntries(of: tar)
    }

    /// `members` as an archive in our indexed layout: one data block, the rich index, the pixz
    /// index, the xz Index and the footer. An archive a reader opens with random access, and one
    /// that streams (it ends with the index the streamed import verifies).
    static func indexed(_ members: [(TarHeader, [UInt8])]) throws -> [UInt8] {
        let tar = try tar(members)
        return try assemble(tar: tar, entries: try entries(of: tar), tarSize: UInt64(tar.count))
    }

    /// An archive whose xz Index and rich index claim `claimedTarSize` bytes of tar (the one data
    /// block really holds a few hundred), with `members` regular files in `Documents` each
    /// claiming all of it but a few KiB: each member lies inside the claimed stream, and twice
    /// the one's content passes 2^64 (more than one overlap, which the index refuses). The claim stops
    /// short of 2^63 by the room the index blocks take, the most an xz stream can describe.
    static func claimingHugeMembers(_ members: Int, claimedTarSize: UInt64 = (1 << 63) - (1 << 20)) throws -> [UInt8] {
        let tar = try tar([file("Documents/small.txt", "small\n")])
        let entries = (0..<members).map { i in
            ArchiveEntry(
                path: "Documents/huge-\(i).bin", kind: .regular, size: claimedTarSize - 4096 - UInt64(i) * 512,
                mode: 0o644, uid: 0, gid: 0, mtime: mtime, linkTarget: nil, headerOffset: UInt64(i) * 512,
                dataOffset: UInt64(i) * 512 + 512, checksum: 0, hasPaxHeader: false)
        }
        return try assemble(tar: tar, entries: entries, tarSize: claimedTarSize)
    }

    /// A stream whose only member's header claims `size` bytes (a pax `size` record) while the
    /// tar holds a few hundred and no end marker: what a receiver sees of a member that claims
    /// nearly 2^63 bytes.
    static func streamClaimingHugeMember(size: UInt64 = (1 << 63) - 1) throws -> [UInt8] {
        let tar = try tarClaimingHugeMember(size: size)
        return try assemble(tar: tar, entries: try entries(of: tar), tarSize: UInt64(tar.count))
    }

    /// The tar of ``streamClaimingHugeMember(size:)``: a header claiming `size` bytes, 512 of them.
    static func tarClaimingHugeMember(size: UInt64 = (1 << 63) - 1) throws -> [UInt8] {
        let header = TarHeader(path: "Documents/huge.bin", kind: .regular, size: size, mode: 0o644, mtime: mtime)
        return try TarEncoder.encode(header) + [UInt8](repeating: 0x61, count: 512)
    }

    /// `tar` in our indexed layout, its index computed from `describing` (a twin of the same layout
    /// that the parser accepts) and then changed by `tamper`: an index that agrees with names the
    /// parser would refuse.
    static func indexed(tar: [UInt8], describing: [UInt8], tamper: (inout [ArchiveEntry]) -> Void) throws -> [UInt8] {
        var list = try entries(of: describing)
        tamper(&list)
        return try assemble(tar: tar, entries: list, tarSize: UInt64(tar.count))
    }

    /// `bytes` compressed by the `xz` tool: a foreign archive, read sequentially (no index).
    static func xzTool(_ bytes: [UInt8]) throws -> [UInt8] {
        let result = try ChildProcess.run("xz", ["-c", "-0", "--check=crc64"], stdin: bytes)
        guard result.status == 0 else { throw CocoaError(.fileWriteUnknown) }
        return result.stdout
    }

    /// The indexed layout around `tar`, with `entries` in the rich index, which says the tar is
    /// `tarSize` bytes long; the xz Index says the same of the data blocks (1 MiB each; when the
    /// claim differs from the tar's real size, there must be one block only, which claims it).
    private static func assemble(tar: [UInt8], entries: [ArchiveEntry], tarSize: UInt64) throws -> [UInt8] {
        let chunk = 1 << 20
        precondition(tar.count <= chunk || tarSize == UInt64(tar.count), "a false claim needs one data block")
        let encoder = try BlockEncoder(preset: 0, maxChunkSize: chunk)
        var out = StreamHeader.encode(check: .crc64)
        var xzIndex = XZIndexBuilder()
        func add(_ payload: [UInt8], claiming uncompressedSize: UInt64? = nil) throws {
            let block = try payload.withUnsafeBytes { try encoder.encode($0) }
            out += block.bytes
            try xzIndex.append(unpaddedSize: block.unpaddedSize, uncompressedSize: uncompressedSize ?? block.uncompressedSize)
        }
        if tar.count <= chunk {
            try add(tar, claiming: tarSize)
        } else {
            for start in stride(from: 0, to: tar.count, by: chunk) { try add(Array(tar[start..<min(tar.count, start + chunk)])) }
        }
        let rich = ArchiveIndex(entries: entries, tarSize: tarSize, chunkSize: UInt64(chunk), metadata: ["writer": "tests"])
        try add(rich.encoded())
        var pixz: [UInt8] = [0xa6, 0x4c, 0x32, 0x2e, 0xd6, 0x14, 0xae, 0xdb]
        for entry in entries {
            pixz += Array(entry.path.utf8) + [0]
            withUnsafeBytes(of: entry.headerOffset.littleEndian) { pixz += $0 }
        }
        pixz += [0]
        withUnsafeBytes(of: tarSize.littleEndian) { pixz += $0 }
        try add(pixz)
        let encodedIndex = xzIndex.encoded()
        out += encodedIndex
        out += StreamFooter.encode(check: .crc64, indexSize: UInt64(encodedIndex.count))
        return out
    }
}
