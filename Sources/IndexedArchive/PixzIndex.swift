/// pixz's file index: the last block of a pixz archive, which lets `pixz -l` list and `pixz -x`
/// extract our archives.
///
/// Payload: the 8-byte magic, then per member its path, NUL and the u64 little-endian offset of its
/// first header block, then an empty path, NUL and the tar length. AppleDouble members (`._name`)
/// are folded into the next member, as pixz itself does.
enum PixzIndex {
    static let magic: [UInt8] = [0xa6, 0x4c, 0x32, 0x2e, 0xd6, 0x14, 0xae, 0xdb]

    static func encode(entries: [ArchiveEntry], tarSize: UInt64, firstHeaderOffset: UInt64) -> [UInt8] {
        var out = magic
        var pendingOffset: UInt64?
        for (position, entry) in entries.enumerated() {
            // pixz records where libarchive says a header starts; for the first member that is the
            // start of the stream, global header included.
            let offset = pendingOffset ?? (position == 0 ? min(firstHeaderOffset, entry.headerOffset) : entry.headerOffset)
            let last = entry.name.split(separator: "/").last.map(String.init) ?? entry.name
            if last.hasPrefix("._") {
                pendingOffset = pendingOffset ?? offset
                continue
            }
            pendingOffset = nil
            out.append(contentsOf: entry.path.utf8)
            out.append(0)
            out.appendLE(offset)
        }
        out.append(0)
        out.appendLE(tarSize)
        return out
    }

    static func hasMagic(_ bytes: some Collection<UInt8>) -> Bool {
        bytes.starts(with: magic)
    }
}
