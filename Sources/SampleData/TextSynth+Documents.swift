import Foundation

/// Whole documents of the kinds an app container holds: JSON API responses, XML property lists,
/// source code, CSV and log files. Each is valid in its format, because a real tree's documents are.
extension TextSynth {
    /// A JSON document (a cached API response) of about `bytes` bytes, pretty-printed or compact.
    mutating func jsonDocument(bytes: Int) -> [UInt8] {
        let pretty = rng.chance(0.5)
        let newline: [UInt8] = pretty ? [0x0a] : []
        func indent(_ level: Int, _ out: inout [UInt8]) {
            if pretty { out.append(contentsOf: repeatElement(0x20, count: 2 * level)) }
        }
        var out: [UInt8] = []
        out.reserveCapacity(bytes + 2048)
        out.append(0x7b)
        out += newline
        indent(1, &out)
        out += Array(#""version":"#.utf8)
        integer(into: &out, upTo: 5)
        out += Array(#","kind":"#.utf8)
        out += Array(["\"feed\"", "\"thread\"", "\"search\"", "\"timeline\""][rng.below(4)].utf8)
        out += Array(#","generatedAt":""#.utf8)
        isoDate(into: &out)
        out += Array(#"","items":["#.utf8)
        out += newline
        // A feed quotes the same few people again and again; so do these documents.
        let authors = (0..<rng.int(in: 3...12)).map { _ in jsonAuthor() }
        var first = true
        while out.count < bytes - 16 {
            if !first {
                out.append(0x2c)
                out += newline
            }
            first = false
            indent(2, &out)
            jsonItem(into: &out, author: authors[rng.below(authors.count)], pretty: pretty)
        }
        out += newline
        indent(1, &out)
        out.append(0x5d)
        out += newline
        out.append(0x7d)
        out += newline
        return out
    }

    /// `{"id":…,"name":…,"email":…}` for one author.
    private mutating func jsonAuthor() -> [UInt8] {
        var out = Array(#"{"id":"#.utf8)
        integer(into: &out, upTo: 1_000_000)
        out += Array(#","name":""#.utf8)
        fullName(into: &out)
        out += Array(#"","email":""#.utf8)
        email(into: &out)
        out += Array(#""}"#.utf8)
        return out
    }

    private mutating func jsonItem(into out: inout [UInt8], author: [UInt8], pretty: Bool) {
        let separator: [UInt8] = pretty ? [0x2c, 0x20] : [0x2c]
        out += Array(#"{"id":""#.utf8)
        uuid(into: &out)
        out += Array(#"","author":"#.utf8)
        out += author
        out += Array(#","createdAt":""#.utf8)
        isoDate(into: &out)
        out += Array(#"","text":""#.utf8)
        prose(into: &out, bytes: rng.logUniform(30, 600))
        out.append(0x22)
        out += separator
        out += Array(#""likes":"#.utf8)
        integer(into: &out, upTo: rng.chance(0.9) ? 50 : 5_000)
        out += separator
        out += Array(#""tags":["#.utf8)
        for i in 0..<rng.below(4) {
            if i > 0 { out.append(0x2c) }
            out.append(0x22)
            out += word()
            out.append(0x22)
        }
        out.append(0x5d)
        if rng.chance(0.4) {
            out += separator
            out += Array(#""media":[{"url":""#.utf8)
            url(into: &out)
            out += Array(#"","width":"#.utf8)
            integer(into: &out, upTo: 4032)
            out += Array(#","height":"#.utf8)
            integer(into: &out, upTo: 3024)
            out += Array(#","mimeType":"image/jpeg"}]"#.utf8)
        }
        for _ in 0..<rng.below(3) {
            out += separator
            out.append(0x22)
            out += key()
            out += Array(#"":"#.utf8)
            switch rng.below(3) {
            case 0: out += Array((rng.chance(0.5) ? "true" : "false").utf8)
            case 1: integer(into: &out, upTo: 10_000)
            default:
                out.append(0x22)
                out += word()
                out.append(0x22)
            }
        }
        out.append(0x7d)
    }

    /// An XML property list of about `bytes` bytes, laid out as `plutil` writes them.
    mutating func plist(bytes: Int) -> [UInt8] {
        var out: [UInt8] = Array(
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">
            <dict>

            """.utf8)
        out.reserveCapacity(bytes + 2048)
        while out.count < bytes - 20 {
            if rng.chance(0.15) {
                tabs(1, &out)
                element("key", key(), &out)
                tabs(1, &out)
                out += Array("<array>\n".utf8)
                for _ in 0..<rng.int(in: 1...8) {
                    tabs(2, &out)
                    out += Array("<dict>\n".utf8)
                    for _ in 0..<rng.int(in: 2...7) { plistPair(level: 3, &out) }
                    tabs(2, &out)
                    out += Array("</dict>\n".utf8)
                }
                tabs(1, &out)
                out += Array("</array>\n".utf8)
            } else {
                plistPair(level: 1, &out)
            }
        }
        out += Array("</dict>\n</plist>\n".utf8)
        return out
    }

    private mutating func plistPair(level: Int, _ out: inout [UInt8]) {
        tabs(level, &out)
        var keyText = key()
        if rng.chance(0.5) {
            let suffix = word()
            keyText.append(suffix[0] >= 0x61 ? suffix[0] - 0x20 : suffix[0])
            keyText += suffix.dropFirst()
        }
        element("key", keyText, &out)
        tabs(level, &out)
        var value: [UInt8] = []
        switch rng.below(10) {
        case 0, 1:
            integer(into: &value, upTo: rng.chance(0.5) ? 100 : 10_000_000)
            element("integer", value, &out)
        case 2:
            integer(into: &value, upTo: 1000)
            value.append(0x2e)
            integer(into: &value, upTo: 1_000_000)
            element("real", value, &out)
        case 3:
            out += Array((rng.chance(0.5) ? "<true/>\n" : "<false/>\n").utf8)
        case 4:
            isoDate(into: &value)
            element("date", value, &out)
        case 5:
            // Archived blobs (NSKeyedArchiver fragments, tokens): base64 that compresses poorly.
            var raw = [UInt8](repeating: 0, count: rng.int(in: 16...96))
            raw.withUnsafeMutableBytes { rng.fill($0) }
            element("data", Array(Data(raw).base64EncodedString().utf8), &out)
        case 6:
            uuid(into: &value)
            element("string", value, &out)
        case 7:
            url(into: &value)
            element("string", value, &out)
        default:
            if rng.chance(0.5) { sentence(into: &value) } else { value = word() }
            element("string", value, &out)
        }
    }

    private func tabs(_ count: Int, _ out: inout [UInt8]) {
        out.append(contentsOf: repeatElement(0x09, count: count))
    }

    private func element(_ tag: String, _ value: [UInt8], _ out: inout [UInt8]) {
        out += Array("<\(tag)>".utf8)
        out += value
        out += Array("</\(tag)>\n".utf8)
    }

    /// Source-code-like text: declarations, calls and comments built from the vocabulary.
    mutating func code(bytes: Int) -> [UInt8] {
        var out: [UInt8] = Array("import Foundation\n\n".utf8)
        while out.count < bytes {
            out += Array("/// ".utf8)
            sentence(into: &out)
            out += Array("\nfunc ".utf8)
            out += word()
            out += Array("(_ ".utf8)
            out += key()
            out += Array(": Int) -> String {\n".utf8)
            for _ in 0..<rng.int(in: 1...6) {
                out += Array("    let ".utf8)
                out += word()
                out += Array(" = ".utf8)
                out += key()
                out += Array(rng.chance(0.5) ? " + ".utf8 : " * ".utf8)
                integer(into: &out, upTo: 1000)
                out.append(0x0a)
            }
            out += Array("    return \"".utf8)
            out += word()
            out += Array("\"\n}\n\n".utf8)
        }
        return out
    }

    /// A CSV table with a header row.
    mutating func csv(bytes: Int) -> [UInt8] {
        var out: [UInt8] = Array("id,name,email,created,amount,note\n".utf8)
        var row = 1
        while out.count < bytes {
            out += Array("\(row),".utf8)
            fullName(into: &out)
            out.append(0x2c)
            email(into: &out)
            out.append(0x2c)
            isoDate(into: &out)
            out.append(0x2c)
            integer(into: &out, upTo: 10_000)
            out += Array(".\(rng.below(100)),".utf8)
            out += word()
            out.append(0x0a)
            row += 1
        }
        return out
    }

    /// Log lines with timestamps, levels and messages.
    mutating func log(bytes: Int) -> [UInt8] {
        var out: [UInt8] = []
        let levels = ["DEBUG", "INFO", "INFO", "INFO", "WARN", "ERROR"]
        while out.count < bytes {
            isoDate(into: &out)
            out += Array(" [\(levels[rng.below(levels.count)])] ".utf8)
            out += key()
            out += Array(": ".utf8)
            sentence(into: &out)
            out += Array(" id=".utf8)
            hex(into: &out, count: 8)
            out.append(0x0a)
        }
        return out
    }
}
