import Tar
import XZ

/// Turns members into a tar stream cut into chunks of exactly `chunkSize` bytes, and records each
/// member for the indexes. Pure bookkeeping: the caller does the I/O and hands chunks on.
struct TarSerializer {
    struct FileIdentity: Hashable {
        var device: UInt64
        var inode: UInt64
    }

    let chunkSize: Int
    private(set) var position: UInt64 = 0
    private(set) var entries: [ArchiveEntry] = []
    private(set) var fileBytes: UInt64 = 0
    private var current: [UInt8]
    private var nextSequence = 0
    private var hardLinks: [FileIdentity: String] = [:]
    private var archivePaths: Set<String> = []

    init(chunkSize: Int) {
        self.chunkSize = chunkSize
        self.current = []
        current.reserveCapacity(chunkSize)
    }

    /// Appends raw bytes, moving every chunk that fills up to `ready`.
    mutating func append(_ bytes: UnsafeRawBufferPointer, into ready: inout [Chunk]) {
        var rest = bytes
        while !rest.isEmpty {
            let room = chunkSize - current.count
            let take = min(room, rest.count)
            current.append(contentsOf: UnsafeRawBufferPointer(rebasing: rest[..<take]))
            rest = UnsafeRawBufferPointer(rebasing: rest[take...])
            position += UInt64(take)
            if current.count == chunkSize { cut(into: &ready) }
        }
    }

    mutating func append(_ bytes: [UInt8], into ready: inout [Chunk]) {
        bytes.withUnsafeBytes { append($0, into: &ready) }
    }

    mutating func appendZeros(_ count: Int, into ready: inout [Chunk]) {
        guard count > 0 else { return }
        append([UInt8](repeating: 0, count: count), into: &ready)
    }

    private mutating func cut(into ready: inout [Chunk]) {
        var full: [UInt8] = []
        full.reserveCapacity(chunkSize)
        swap(&full, &current)
        ready.append(Chunk(sequence: nextSequence, bytes: full))
        nextSequence += 1
    }

    /// A pax global header at the very start, so a streaming reader knows the metadata before the
    /// first member.
    mutating func appendGlobalHeader(_ metadata: [String: String], into ready: inout [Chunk]) throws {
        guard !metadata.isEmpty else { return }
        let records = metadata.keys.sorted().map { (key: "AMK.\($0)", value: metadata[$0]!) }
        append(try TarEncoder.encodeGlobalHeader(records), into: &ready)
    }

    /// If `identity` was stored before as a regular file, the path to link to.
    func hardLinkTarget(for identity: FileIdentity) -> String? { hardLinks[identity] }

    mutating func rememberHardLink(_ identity: FileIdentity, path: String) { hardLinks[identity] = path }

    /// Whether an archive path is already taken; two members with one name would make extraction
    /// depend on order.
    func contains(archivePath: String) -> Bool { archivePaths.contains(archivePath) }

    /// Encodes a member's headers and records it in the index. The content follows through
    /// `append`, then `endMember`.
    mutating func beginMember(_ header: TarHeader, into ready: inout [Chunk]) throws {
        var header = header
        if header.kind == .directory && !header.path.hasSuffix("/") { header.path += "/" }
        let encoded = try TarEncoder.encode(header)
        let headerOffset = position
        append(encoded, into: &ready)
        archivePaths.insert(header.path.hasSuffix("/") ? String(header.path.dropLast()) : header.path)
        entries.append(ArchiveEntry(
            path: header.path, kind: header.kind, size: header.size, mode: header.mode,
            uid: header.uid, gid: header.gid, mtime: header.mtime, linkTarget: header.linkTarget,
            headerOffset: headerOffset, dataOffset: position,
            checksum: header.kind == .regular ? 0 : nil,
            hasPaxHeader: encoded.count > TarEncoder.blockSize))
        fileBytes += header.size
    }

    /// Pads the content to a 512-byte boundary and records its checksum.
    mutating func endMember(checksum: UInt64, into ready: inout [Chunk]) {
        guard let last = entries.indices.last else { return }
        if entries[last].kind == .regular { entries[last].checksum = checksum }
        appendZeros(TarEncoder.padding(forContentSize: entries[last].size), into: &ready)
    }

    /// The end-of-archive marker and the last, short chunk.
    mutating func finish(into ready: inout [Chunk]) {
        append(TarEncoder.endOfArchive, into: &ready)
        if !current.isEmpty { cut(into: &ready) }
    }

    /// Chunks handed out so far.
    var chunkCount: Int { nextSequence }
}
