import TestSupport
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

/// Which files are x86 machine code, for the branch filter (``FileClass/isX86Code(_:)``).
@Suite struct FileClassX86CodeTests {
    private func elf(machine: UInt16, bigEndian: Bool = false) -> [UInt8] {
        var header = [UInt8](repeating: 0, count: 64)
        header.replaceSubrange(0..<7, with: [0x7F, 0x45, 0x4C, 0x46, 2, bigEndian ? 2 : 1, 1])
        header[18] = UInt8(machine & 0xFF)
        header[19] = UInt8(machine >> 8)
        return header
    }

    /// An `ar` member header: name, then the size in decimal at offset 48, then the terminator.
    private func arMember(_ name: String, _ content: [UInt8]) -> [UInt8] {
        func field(_ text: String, _ width: Int) -> [UInt8] { Array(text.utf8) + Array(repeating: 0x20, count: width - text.utf8.count) }
        let header =
            field(name, 16) + field("0", 12) + field("0", 6) + field("0", 6) + field("644", 8) + field("\(content.count)", 10) + [
                0x60, 0x0A
            ]
        return header + content + (content.count % 2 == 1 ? [0x0A] : [])
    }

    @Test func elfForX86IsCodeAndOtherMachinesAreNot() {
        #expect(FileClass.isX86Code(elf(machine: 62)), "x86-64")
        #expect(FileClass.isX86Code(elf(machine: 3)), "i386")
        #expect(!FileClass.isX86Code(elf(machine: 183)), "AArch64")
        #expect(!FileClass.isX86Code(elf(machine: 62, bigEndian: true)), "a big-endian header is not x86")
        #expect(!FileClass.isX86Code(Array(elf(machine: 62).prefix(18))), "cut before e_machine")
        #expect(FileClass.isX86Code(MachineCode.elfExecutable(codeSize: 100, seed: 1)))
    }

    @Test func aStaticLibraryIsJudgedByItsFirstObject() {
        let symbols = arMember("/", [0, 0, 0, 1, 0, 0, 0, 0, 0x41])  // odd size: padded to even
        let x86 = Array("!<arch>\n".utf8) + symbols + arMember("a.o/", elf(machine: 62)) + arMember("b.o/", elf(machine: 62))
        let arm = Array("!<arch>\n".utf8) + symbols + arMember("a.o/", elf(machine: 183))
        let text = Array("!<arch>\n".utf8) + arMember("notes.txt/", Array("just words".utf8))
        #expect(FileClass.isX86Code(x86))
        #expect(!FileClass.isX86Code(arm))
        #expect(!FileClass.isX86Code(text))
        #expect(!FileClass.isX86Code(Array("!<arch>\nnot a header at all, and not sixty bytes long either, no".utf8)))
    }

    @Test func machOAndPEAreReadFromTheirMachineFields() {
        var macho = [UInt8](repeating: 0, count: 32)
        macho.replaceSubrange(0..<8, with: [0xCF, 0xFA, 0xED, 0xFE, 0x07, 0x00, 0x00, 0x01])
        #expect(FileClass.isX86Code(macho))
        macho.replaceSubrange(4..<8, with: [0x0C, 0x00, 0x00, 0x01])  // CPU_TYPE_ARM64
        #expect(!FileClass.isX86Code(macho))

        var pe = [UInt8](repeating: 0, count: 0x90)
        pe[0] = 0x4D
        pe[1] = 0x5A
        pe[0x3C] = 0x80
        pe.replaceSubrange(0x80..<0x86, with: [0x50, 0x45, 0, 0, 0x64, 0x86])
        #expect(FileClass.isX86Code(pe))
        pe.replaceSubrange(0x84..<0x86, with: [0x64, 0xAA])  // ARM64
        #expect(!FileClass.isX86Code(pe))
        #expect(!FileClass.isX86Code(Array("MZ and then prose".utf8)))
    }

    @Test func textAndEmptyFilesAreNotCode() {
        #expect(!FileClass.isX86Code([UInt8]()))
        #expect(!FileClass.isX86Code(Array("#!/bin/sh\necho hello\n".utf8)))
        #expect(!FileClass.isX86Code(MachineCode.x86(1000, seed: 2)), "code without a header is not recognised")
    }
}
