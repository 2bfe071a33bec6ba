import Tar
import Testing

@testable import IndexedArchive

@Suite struct TerminalSafeTests {
    @Test func printableNamesAreUnchanged() {
        for name in ["notes/todo.txt", "a b/c'd\"e", "photos/été/猫.jpg", "emoji/👩‍👩‍👧.png", "bad\u{FFFD}utf8", ""] {
            #expect(TerminalSafe.name(name) == name)
            #expect(TerminalSafe.message(name) == name)
        }
    }

    @Test func controlCharactersAreEscaped() {
        #expect(TerminalSafe.name("a\nb\tc\rd") == #"a\nb\tc\rd"#)
        #expect(TerminalSafe.name("\u{1B}[2Jclear") == #"\x1b[2Jclear"#)
        #expect(TerminalSafe.name("nul\u{0}bell\u{7}del\u{7F}") == #"nul\x00bell\x07del\x7f"#)
        #expect(TerminalSafe.name("c1\u{85}\u{9B}31m") == #"c1\u0085\u009b31m"#)
        #expect(TerminalSafe.name("line\u{2028}para\u{2029}") == #"line\u2028para\u2029"#)
    }

    @Test func bidiControlsAreEscaped() {
        // "invoice‮fdp.exe" shows as "invoiceexe.pdf".
        #expect(TerminalSafe.name("invoice\u{202E}fdp.exe") == #"invoice\u202efdp.exe"#)
        for value: UInt32 in [0x061C, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069] {
            let escaped = TerminalSafe.name("x" + String(Unicode.Scalar(value)!))
            #expect(escaped == "x\\u" + String(value, radix: 16).leftPadded(to: 4), "U+\(String(value, radix: 16))")
        }
    }

    @Test func backslashIsEscapedInNamesOnly() {
        #expect(TerminalSafe.name(#"a\nb"#) == #"a\\nb"#)
        #expect(TerminalSafe.name("a\nb") == #"a\nb"#)
        #expect(TerminalSafe.message(#"a\nb"#) == #"a\nb"#)
        #expect(TerminalSafe.message("a\nb\u{1B}") == #"a\nb\x1b"#)
    }

    @Test func escapedTextHoldsNoControlCharacters() {
        let every = String(String.UnicodeScalarView((0...0x3000).compactMap(Unicode.Scalar.init)))
        for escaped in [TerminalSafe.name(every), TerminalSafe.message(every)] {
            let bad = escaped.unicodeScalars.filter {
                $0.properties.generalCategory == .control || $0.properties.isBidiControl || $0 == "\u{2028}" || $0 == "\u{2029}"
            }
            #expect(bad.isEmpty, "\(bad.map(\.value))")
        }
    }

    @Test func messageIsIdempotent() {
        let raw = "member 'a\u{1B}]0;x\u{7}' \\ \u{202E}"
        let once = TerminalSafe.message(TerminalSafe.name(raw))
        #expect(TerminalSafe.message(once) == once)
        #expect(once == TerminalSafe.name(raw))
    }

    @Test func parseNameUndoesName() {
        let names = ["plain", "a\nb", #"back\slash"#, #"a\\nb"#, "\u{1B}[2J\u{0}\u{7F}\u{85}", "rtl\u{202E}gpj.exe", "\\", "x\\"]
        for name in names {
            #expect(TerminalSafe.parseName(TerminalSafe.name(name)) == name, "\(name.debugDescription)")
        }
    }

    /// A byte of a name that is not UTF-8 prints as bash's `\xHH`, and that form reads back
    /// as the byte, not as the character U+00HH (`\xe9` is not "é").
    @Test func bytesThatAreNotUTF8PrintAsHexAndParseBack() {
        let name = RawName.decode([0x63, 0x61, 0x66, 0xE9, 0x2F, 0xFF])
        #expect(TerminalSafe.name(name) == #"caf\xe9/\xff"#)
        #expect(TerminalSafe.parseName(#"caf\xe9/\xff"#) == name)
        #expect(RawName.encode(TerminalSafe.parseName(TerminalSafe.name(name))) == [0x63, 0x61, 0x66, 0xE9, 0x2F, 0xFF])
        // Bytes that together are UTF-8 are that character, as in bash: the name matches the
        // member that `amk list` prints as "é".
        #expect(TerminalSafe.parseName(#"\xc3\xa9"#) == "é")
    }

    /// The bytes `amk list` writes for a name are what ``TerminalSafe/name(_:)`` makes of it,
    /// whether the name takes the plain path (copied) or needs escaping.
    @Test func appendNameWritesWhatNameMakes() {
        let names = [
            "notes/todo.txt", "", " lead and trail ", "~!@#$%^&*()_+{}|:<>?`-=[];',./", "dir\\file", "a\nb", "\u{1B}[2J",
            "del\u{7F}", "c1\u{9B}", "photos/\u{E9}t\u{E9}", "invoice\u{202E}fdp.exe", RawName.decode([0x63, 0xE9, 0xFF])
        ]
        var out: [UInt8] = Array("before|".utf8)
        for name in names {
            var one: [UInt8] = []
            TerminalSafe.appendName(ArraySlice(name.utf8), to: &one)
            #expect(one == Array(TerminalSafe.name(name).utf8), "\(TerminalSafe.name(name))")
            TerminalSafe.appendName(ArraySlice(name.utf8), to: &out)
        }
        #expect(out == Array(("before|" + names.map(TerminalSafe.name).joined()).utf8), "appends, keeping what was there")
        var escaped: [UInt8] = []
        TerminalSafe.appendName(ArraySlice("a\nb\\c".utf8), to: &escaped)
        #expect(String(decoding: escaped, as: UTF8.self) == #"a\nb\\c"#)
    }

    @Test func parseNameKeepsUnknownEscapes() {
        #expect(TerminalSafe.parseName(#"dir\file"#) == #"dir\file"#)
        #expect(TerminalSafe.parseName(#"\xZZ\u12"#) == #"\xZZ\u12"#)
        #expect(TerminalSafe.parseName(#"trailing\"#) == #"trailing\"#)
        #expect(TerminalSafe.parseName(#"\x41\u00e9"#) == "Aé")
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
