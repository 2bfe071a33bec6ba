import Tar

/// pixz's file index: the last block of a pixz archive, which lets `pixz -l` list and `pixz -x`
/// extract our archives.
///
/// Payload: the 8-byte magic, then per member its path, NUL and the u64 little-endian offset of its
/// first header block, then an empty path, NUL and the tar length. AppleDouble members (`._name`)
/// are folded into the next member, as pixz itself does.
enum PixzIndex {
    static let magic: [UInt8] = [0xa6, 0x4c, 0x32, 0x2e, 0xd6, 0x14, 0xae, 0xdb]

    static func encode(entries: [ArchiveEntry], tarSize: UInt64) -> [UInt8] {
        var builder = Builder()
        for entry in entries { builder.append(entry) }
        return builder.finished(tarSize: tarSize)
    }

    /// The index built one member at a time, in tar order, as a pack stores them.
    struct Builder: Sendable {
        private var out = PixzIndex.magic
        private var pendingOffset: UInt64?
        private var isFirst = true

        mutating func append(_ entry: ArchiveEntry) {
            // pixz records where libarchive says a header starts; for the first member that is the
            // start of the stream, global header included.
            let offset = pendingOffset ?? (isFirst ? 0 : entry.headerOffset)
            isFirst = false
            let last = PathBytes.lastComponent(entry.name) ?? entry.name
            if last.utf8.starts(with: "._".utf8) {
                pendingOffset = pendingOffset ?? offset
                return
            }
            pendingOffset = nil
            // The bytes of the tar header, which pixz compares with what libarchive reads there.
            out.append(contentsOf: RawName.encode(entry.path))
            out.append(0)
            out.appendLE(offset)
        }

        /// The payload, ended with the tar stream's length.
        func finished(tarSize: UInt64) -> [UInt8] {
            var out = out
            out.append(0)
            out.appendLE(tarSize)
            return out
        }
    }

    static func hasMagic(_ bytes: some Collection<UInt8>) -> Bool {
        bytes.starts(with: magic)
    }
}
