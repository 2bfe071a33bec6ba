import Tar
import Testing

struct TarEntryKindTests {
    @Test func namedKindsUsePosixTypeflags() {
        let expected: [(TarEntryKind, Character)] = [
            (.regular, "0"), (.hardLink, "1"), (.symbolicLink, "2"), (.characterDevice, "3"),
            (.blockDevice, "4"), (.directory, "5"), (.fifo, "6")
        ]
        for (kind, flag) in expected {
            #expect(kind.typeflag == flag.asciiValue, "\(kind)")
            #expect(TarEntryKind(typeflag: flag.asciiValue!) == kind)
        }
    }

    @Test func nulAndContiguousAreRegular() {
        #expect(TarEntryKind(typeflag: 0) == .regular)
        #expect(TarEntryKind(typeflag: UInt8(ascii: "7")) == .regular)
    }

    /// GNU's dumpdir ('D') is a directory whose content lists its names; it is written back as
    /// a plain directory ('5').
    @Test func gnuDumpdirIsADirectory() {
        #expect(TarEntryKind(typeflag: UInt8(ascii: "D")) == .directory)
        #expect(TarEntryKind(typeflag: UInt8(ascii: "D")).typeflag == UInt8(ascii: "5"))
    }

    @Test func everyOtherByteIsKeptVerbatim() {
        for byte in UInt8.min...UInt8.max {
            let kind = TarEntryKind(typeflag: byte)
            if byte == UInt8(ascii: "D") {
                #expect(kind == .directory)
            } else if byte == 0 || byte == UInt8(ascii: "7") {
                #expect(kind.typeflag == UInt8(ascii: "0"))
            } else {
                #expect(kind.typeflag == byte, "typeflag \(byte)")
            }
            if !(UInt8(ascii: "0")...UInt8(ascii: "7")).contains(byte), byte != 0, byte != UInt8(ascii: "D") {
                #expect(kind == .other(byte))
            }
        }
    }

    @Test func hashableDistinguishesOtherFlags() {
        let set: Set<TarEntryKind> = [.other(UInt8(ascii: "V")), .other(UInt8(ascii: "M")), .regular, .regular]
        #expect(set.count == 3)
    }
}
