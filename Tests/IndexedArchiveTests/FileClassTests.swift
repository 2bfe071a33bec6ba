import Testing

@testable import IndexedArchive

@Suite struct FileClassTests {
    @Test func compressedFormatsAreKnownByNameOrSignature() {
        let big: UInt64 = 100_000
        #expect(FileClass.isIncompressible(path: "/doc/changelog.Debian.gz", size: big))
        #expect(FileClass.isIncompressible(path: "icons/Logo.PNG", size: big), "extensions in any case")
        #expect(!FileClass.isIncompressible(path: "src/main.swift", size: big))
        #expect(!FileClass.isIncompressible(path: "dir.gz/README", size: big), "a dot in a folder name is not an extension")
        #expect(!FileClass.isIncompressible(path: "small.gz", size: 1000), "small files stay with the rest")
        #expect(FileClass.isIncompressible(path: "blob", size: big, prefix: [0x1f, 0x8b, 0x08, 0, 0][...]), "gzip signature")
        #expect(FileClass.isIncompressible(path: "blob", size: big, prefix: [0x42, 0x5a, 0x68, 0x39][...]), "bzip2 signature")
        #expect(!FileClass.isIncompressible(path: "blob", size: big, prefix: Array("BZh is a word".utf8)[...]))
        #expect(!FileClass.isIncompressible(path: "blob", size: big, prefix: Array("plain text".utf8)[...]))
    }
}
