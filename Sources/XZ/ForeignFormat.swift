/// What a file that is not xz seems to be, from its first bytes, so that the error a user reads
/// says "this is gzip" rather than only "not xz": a `.tar.gz` handed to `amk` is a common slip.
enum ForeignFormat {
    /// How many leading bytes ``describe(_:)`` can use: a tar header's `ustar` magic is at 257.
    static let headSize = 263

    /// A few words for the format `head` (a file's first bytes) starts like, or nil.
    static func describe(_ head: some Collection<UInt8>) -> String? {
        let bytes = Array(head.prefix(headSize))
        func starts(_ magic: [UInt8]) -> Bool { bytes.starts(with: magic) }
        if starts([0x1f, 0x8b]) { return "gzip-compressed data (.gz, .tgz)" }
        if starts(Array("BZh".utf8)), bytes.count > 3, (0x31...0x39).contains(bytes[3]) { return "bzip2-compressed data (.bz2)" }
        if starts([0x28, 0xb5, 0x2f, 0xfd]) { return "zstd-compressed data (.zst)" }
        if starts([0x04, 0x22, 0x4d, 0x18]) { return "lz4-compressed data (.lz4)" }
        if starts(Array("LZIP".utf8)) { return "lzip-compressed data (.lz)" }
        if starts([0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c]) { return "a 7-Zip archive" }
        if starts([0x50, 0x4b, 0x03, 0x04]) || starts([0x50, 0x4b, 0x05, 0x06]) { return "a zip archive" }
        // The .lzma format (LZMA-alone) has no magic; its usual properties byte and dictionary.
        if bytes.count >= 13, bytes[0] == 0x5d, bytes[1] == 0x00, bytes[2] == 0x00 { return "LZMA-alone data (.lzma)" }
        if bytes.count >= 262, Array(bytes[257..<262]) == Array("ustar".utf8) { return "an uncompressed tar archive" }
        return nil
    }

    /// The message for input that does not start with xz's magic.
    static func notXZMessage(_ head: some Collection<UInt8>) -> String {
        guard let format = describe(head) else {
            return "not an xz file (no stream header magic where a stream should start)"
        }
        return "not an xz file: this looks like \(format); amk reads xz-compressed tar archives (.tar.xz)"
    }
}
