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

/// Which files are linked x86 machine code, for the branch filter (``FileClass/isX86Code(_:)``).
@Suite struct FileClassX86CodeTests {
    /// An ELF header: `type` 1 relocatable, 2 executable, 3 shared object.
    private func elf(type: UInt16 = 3, machine: UInt16, bigEndian: Bool = false) -> [UInt8] {
        var header = [UInt8](repeating: 0, count: 64)
        header.replaceSubrange(0..<7, with: [0x7F, 0x45, 0x4C, 0x46, 2, bigEndian ? 2 : 1, 1])
        header[16] = UInt8(type & 0xFF)
        header[18] = UInt8(machine & 0xFF)
        header[19] = UInt8(machine >> 8)
        return header
    }

    @Test func linkedELFForX86IsCodeAndOtherMachinesAreNot() {
        #expect(FileClass.isX86Code(elf(machine: 62)), "x86-64 shared object")
        #expect(FileClass.isX86Code(elf(type: 2, machine: 62)), "x86-64 executable")
        #expect(FileClass.isX86Code(elf(type: 2, machine: 3)), "i386")
        #expect(!FileClass.isX86Code(elf(machine: 183)), "AArch64")
        #expect(!FileClass.isX86Code(elf(machine: 62, bigEndian: true)), "a big-endian header is not x86")
        #expect(!FileClass.isX86Code(Array(elf(machine: 62).prefix(18))), "cut before e_machine")
        #expect(FileClass.isX86Code(MachineCode.elfExecutable(codeSize: 100, seed: 1)))
    }

    /// Unlinked code has a zero displacement in every call, which the filter would make distinct.
    @Test func objectFilesAndStaticLibrariesAreNotCode() {
        #expect(!FileClass.isX86Code(elf(type: 1, machine: 62)), "a relocatable object")
        var library = Array("!<arch>\n".utf8)
        let member = Array("a.o/            0           0     0     644     64        `\n".utf8)
        library += member + elf(type: 1, machine: 62)
        #expect(!FileClass.isX86Code(library), "an ar archive of objects")
    }

    @Test func machOAndPEAreReadFromTheirTypeAndMachineFields() {
        var macho = [UInt8](repeating: 0, count: 32)
        macho.replaceSubrange(0..<8, with: [0xCF, 0xFA, 0xED, 0xFE, 0x07, 0x00, 0x00, 0x01])
        macho[12] = 6  // MH_DYLIB
        #expect(FileClass.isX86Code(macho))
        macho[12] = 1  // MH_OBJECT
        #expect(!FileClass.isX86Code(macho), "an object file")
        macho[12] = 2  // MH_EXECUTE
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
