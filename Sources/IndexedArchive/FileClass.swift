/// Whether a file's content is already compressed, decided per file as it is read (issue #12).
///
/// On real trees the `.gz`, `.png` or `.zip` files sit among text in every chunk, so a per-chunk
/// sample rarely finds a chunk to store, and LZMA spends as long on them as on text for nothing
/// (on random data, preset 6 takes as long as on text and saves nothing). Files classed here go
/// apart (``TarSerializer``) into stored blocks: no LZMA work at all, and the text that remains
/// compresses together. The test is cheap: the name's extension, and for content already in
/// memory the format's magic bytes. A wrong guess costs little either way: a compressible file
/// stored is a few KiB larger, an incompressible one missed takes the ordinary path. It also
/// tells linked x86 machine code by its header (``isX86Code(_:)``), for the x86 branch filter.
enum FileClass {
    /// Files smaller than this stay with the rest: stored, their 512-byte tar header and padding
    /// would not be compressed, which costs more than LZMA's time on a few KiB.
    static let minimumSize: UInt64 = 16 * 1024

    /// Extensions of formats that are compressed as a whole (lower case).
    static let compressedExtensions: Set<String> = [
        "gz", "tgz", "xz", "txz", "lzma", "bz2", "tbz", "tbz2", "zst", "zstd", "lz4", "lz", "br", "7z", "rar",
        "zip", "jar", "war", "whl", "apk", "aar", "nupkg", "epub", "docx", "xlsx", "pptx", "odt", "ods",
        "png", "jpg", "jpeg", "gif", "webp", "heic", "avif", "jxl",
        "mp3", "mp4", "m4a", "m4v", "aac", "ogg", "oga", "opus", "flac", "mkv", "webm", "mov", "avi",
        "woff", "woff2", "pack"
    ]

    /// Whether a file of `size` bytes named `path` should be stored rather than compressed.
    /// `prefix`, when the content is at hand, is checked for a compressed format's signature.
    static func isIncompressible(path: String, size: UInt64, prefix: ArraySlice<UInt8>? = nil) -> Bool {
        guard size >= minimumSize else { return false }
        if let dot = path.utf8.lastIndex(of: UInt8(ascii: ".")),
            !path[dot...].contains("/")
        {
            let ext = path[path.index(after: dot)...].lowercased()
            if compressedExtensions.contains(ext) { return true }
        }
        guard let prefix else { return false }
        return hasCompressedSignature(prefix)
    }

    /// gzip, xz, zstd, bzip2, 7z, PNG, JPEG and zip signatures.
    static func hasCompressedSignature(_ bytes: ArraySlice<UInt8>) -> Bool {
        let head = Array(bytes.prefix(8))
        func starts(_ magic: [UInt8]) -> Bool { head.count >= magic.count && Array(head.prefix(magic.count)) == magic }
        if starts([0x1f, 0x8b, 0x08]) { return true }  // gzip, deflate
        if starts([0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00]) { return true }  // xz
        if starts([0x28, 0xb5, 0x2f, 0xfd]) { return true }  // zstd
        if starts([0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c]) { return true }  // 7z
        if starts([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]) { return true }  // PNG
        if starts([0xff, 0xd8, 0xff]) { return true }  // JPEG
        if starts([0x50, 0x4b, 0x03, 0x04]) { return true }  // zip (jar, docx...)
        if head.count >= 4, starts([0x42, 0x5a, 0x68]), (0x31...0x39).contains(head[3]) { return true }  // bzip2
        return false
    }

    /// Whether `bytes`, the start of a file, are linked x86 or x86-64 machine code that the x86
    /// branch filter helps (``XZ/BranchFilter``): an ELF executable or shared object for x86-64 or
    /// i386, a Mach-O x86-64 executable, library or bundle, or a PE (Windows) image for x86-64 or
    /// i386. Read from the headers' type and machine fields.
    ///
    /// Object files and static libraries (`.o`, `.a`) are not: their calls are not linked yet, so
    /// each call's displacement is zero, the same bytes at every call site, and the filter would
    /// turn those repeats into distinct addresses. Measured with `xz` at amk's settings: a Swift
    /// toolchain's `libswiftCore.a` grows 6% through the filter, its `libswiftCore.so` shrinks 5%.
    static func isX86Code<Bytes: RandomAccessCollection<UInt8>>(_ bytes: Bytes) -> Bool where Bytes.Index == Int {
        func byte(_ offset: Int) -> UInt8? {
            offset >= 0 && offset < bytes.count ? bytes[bytes.startIndex + offset] : nil
        }
        func little16(_ offset: Int) -> UInt16? {
            guard let low = byte(offset), let high = byte(offset + 1) else { return nil }
            return UInt16(low) | UInt16(high) << 8
        }
        func little32(_ offset: Int) -> UInt32? {
            guard let low = little16(offset), let high = little16(offset + 2) else { return nil }
            return UInt32(low) | UInt32(high) << 16
        }
        func starts(_ magic: [UInt8], at offset: Int = 0) -> Bool {
            magic.indices.allSatisfy { byte(offset + $0) == magic[$0] }
        }
        if starts([0x7F, 0x45, 0x4C, 0x46]) {
            // EI_DATA 1: little-endian; e_type 2 (executable) or 3 (shared object, PIE);
            // e_machine 3 (i386) or 62 (x86-64).
            guard byte(5) == 1, let type = little16(16), let machine = little16(18) else { return false }
            return (type == 2 || type == 3) && (machine == 3 || machine == 62)
        }
        if starts([0xCF, 0xFA, 0xED, 0xFE]) {
            // Mach-O 64-bit: CPU_TYPE_X86_64; filetype MH_EXECUTE, MH_DYLIB or MH_BUNDLE.
            guard little32(4) == 0x0100_0007, let type = little32(12) else { return false }
            return type == 2 || type == 6 || type == 8
        }
        if starts([0x4D, 0x5A]), let peOffset = little32(0x3C), peOffset < 1 << 20 {
            let pe = Int(peOffset)
            guard starts([0x50, 0x45, 0, 0], at: pe), let machine = little16(pe + 4) else { return false }
            return machine == 0x8664 || machine == 0x014C
        }
        return false
    }
}
