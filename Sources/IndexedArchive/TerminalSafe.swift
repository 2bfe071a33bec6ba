import Tar

/// Makes text from an archive or a peer safe to print on a terminal.
///
/// Member names, link targets, metadata and a peer's messages are chosen by whoever made the
/// archive or runs the other end. Printed raw, `ESC [ 2 J` clears the screen, other escape
/// sequences retitle the window or rewrite what is already shown, a newline forges an extra line
/// in `amk list`, and the bidirectional overrides make one name look like another. Every
/// human-readable output of the package passes such text through here; JSON output does not need
/// to (its encoder escapes control characters itself).
///
/// Escaped are the characters that move the cursor or change how the rest of the line is shown:
/// - C0 controls, DEL and C1 controls (general category `Cc`): `\n`, `\t`, `\r`, otherwise `\x1b`
///   style for the ASCII ones and `\u0085` style for C1;
/// - the line and paragraph separators U+2028 and U+2029, which some viewers break lines at;
/// - the bidirectional controls (`Bidi_Control`: U+061C, U+200E, U+200F, U+202A–U+202E,
///   U+2066–U+2069) as `\u202e` style.
///
/// The forms are those of Python and of bash's `$'...'`, so an escaped name can be pasted there to
/// get the real one back; ``parseName(_:)`` undoes ``name(_:)`` for `amk`'s own arguments. Other
/// characters are printed as they are. A byte of a name that is not UTF-8 (Tar's `RawName`) prints as
/// `\xe9`, as bash's `$'...'` spells it.
public enum TerminalSafe {
    /// A name (member path, link target, file path, metadata key or value) for printing.
    ///
    /// The backslash itself is escaped too (`\\`), so the printed form is unambiguous: a member
    /// really called `a\nb` (backslash, n) prints as `a\\nb`, one with a newline as `a\nb`.
    public static func name(_ text: String) -> String {
        escape(text, backslash: true)
    }

    /// A message (an error's description, a peer's status) for printing.
    ///
    /// Messages often already hold names escaped by ``name(_:)`` (an ``ArchiveError``'s
    /// description is one), so backslashes are left alone here: escaping them again would double
    /// every backslash of those names. This makes the function idempotent, which lets every layer
    /// that prints a message apply it without knowing whether a lower layer already did.
    public static func message(_ text: String) -> String {
        escape(text, backslash: false)
    }

    /// The name that ``name(_:)`` printed as `text`: `\\`, `\n`, `\t`, `\r`, `\xHH` and `\uHHHH`
    /// are decoded (`\xHH` from `\x80` up as a raw byte); any other backslash is kept as it is.
    ///
    /// So `amk extract A NAME` accepts a member exactly as `amk list` prints it, including one
    /// whose name holds a newline.
    public static func parseName(_ text: String) -> String {
        guard text.utf8.contains(UInt8(ascii: "\\")) else { return text }
        let scalars = Array(text.unicodeScalars)
        var out = String.UnicodeScalarView()
        var index = 0
        while index < scalars.count {
            let scalar = scalars[index]
            guard scalar == "\\", index + 1 < scalars.count else {
                out.append(scalar)
                index += 1
                continue
            }
            switch scalars[index + 1] {
            case "\\":
                out.append("\\")
                index += 2
            case "n":
                out.append("\n")
                index += 2
            case "t":
                out.append("\t")
                index += 2
            case "r":
                out.append("\r")
                index += 2
            case let form where form == "x" || form == "u":
                let digits = form == "x" ? 2 : 4
                if let decoded = hexScalar(scalars, from: index + 2, count: digits) {
                    // `\xHH` from 0x80 up is a byte of a name that is not UTF-8, as in bash.
                    out.append(form == "x" && decoded.value >= 0x80 ? RawName.escape(UInt8(decoded.value)) : decoded)
                    index += 2 + digits
                } else {
                    out.append(scalar)
                    index += 1
                }
            default:
                out.append(scalar)
                index += 1
            }
        }
        // Escaped bytes that together spell UTF-8 ("\xc3\xa9") are that text ("é"), as in
        // bash, so the name matches the member as stored.
        let parsed = String(out)
        return RawName.holdsEscapes(parsed) ? RawName.decode(RawName.encode(parsed)) : parsed
    }

    /// The scalar spelt by `count` hex digits at `scalars[start...]`, if they are all there.
    private static func hexScalar(_ scalars: [Unicode.Scalar], from start: Int, count: Int) -> Unicode.Scalar? {
        guard start + count <= scalars.count else { return nil }
        var value: UInt32 = 0
        for scalar in scalars[start..<(start + count)] {
            guard scalar.isASCII, let digit = UInt32(String(scalar), radix: 16) else { return nil }
            value = value << 4 | digit
        }
        return Unicode.Scalar(value)
    }

    /// Appends ``name(_:)`` of the name whose UTF-8 is `bytes` to `out`: the bytes themselves
    /// when none needs escaping, which is nearly every name, without making a string.
    package static func appendName(_ bytes: ArraySlice<UInt8>, to out: inout [UInt8]) {
        let isPlain = bytes.withUnsafeBufferPointer { buffer in
            for byte in buffer where !plain(byte) { return false }
            return true
        }
        if isPlain {
            out.append(contentsOf: bytes)
        } else {
            out.append(contentsOf: name(String(decoding: bytes, as: UTF8.self)).utf8)
        }
    }

    /// A byte that stands for itself in a name: printable ASCII but the backslash.
    @inline(__always)
    private static func plain(_ byte: UInt8) -> Bool { byte >= 0x20 && byte < 0x7F && byte != UInt8(ascii: "\\") }

    private static func escape(_ text: String, backslash: Bool) -> String {
        // Most names are printable ASCII: return them untouched without walking the scalars. A
        // native string's UTF-8 is contiguous, and a plain loop over it is several times faster
        // than the generic walk (`amk list` of 13,890 names spent 5% of its time here).
        let isPlain =
            text.utf8.withContiguousStorageIfAvailable { bytes in
                for byte in bytes where !plain(byte) { return false }
                return true
            } ?? text.utf8.allSatisfy(plain)
        if isPlain { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": out += backslash ? "\\\\" : "\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            default:
                if let byte = RawName.escapedByte(scalar) {
                    out += "\\x" + String(byte, radix: 16)
                } else if needsEscape(scalar) {
                    let digits = String(scalar.value, radix: 16)
                    out +=
                        scalar.isASCII
                        ? "\\x" + String(repeating: "0", count: 2 - digits.count) + digits
                        : "\\u" + String(repeating: "0", count: 4 - digits.count) + digits
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }

    /// Whether `scalar` is one of the characters listed in the type's documentation, which
    /// ``name(_:)`` and ``message(_:)`` escape (the backslash aside).
    ///
    /// For output with escapes of its own: `amk list --json` writes these as JSON `\u` escapes.
    public static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        let properties = scalar.properties
        switch properties.generalCategory {
        case .control, .lineSeparator, .paragraphSeparator: return true
        default: return properties.isBidiControl
        }
    }
}
