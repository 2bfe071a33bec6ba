import Foundation

/// Appends realistic pieces of app data (sentences, names, e-mail addresses, dates, identifiers)
/// to a byte buffer.
///
/// Everything works on `[UInt8]` rather than `String`: the corpora are hundreds of MiB, and
/// building them through `String` would make generation slower than the benchmark itself.
struct TextSynth: Sendable {
    let vocabulary: Vocabulary
    var rng: SplitMix64

    init(vocabulary: Vocabulary = .shared, rng: SplitMix64) {
        self.vocabulary = vocabulary
        self.rng = rng
    }

    /// A sentence of 4 to 20 words, capitalised, with the odd comma or number, and a full stop.
    mutating func sentence(into out: inout [UInt8]) {
        let count = rng.int(in: 4...20)
        for i in 0..<count {
            if i > 0 { out.append(0x20) }
            if rng.chance(0.03) {
                integer(into: &out, upTo: rng.chance(0.5) ? 100 : 100_000)
                continue
            }
            let word = vocabulary.word(&rng)
            if i == 0, let first = word.first, (0x61...0x7a).contains(first) {
                out.append(first - 0x20)
                out.append(contentsOf: word.dropFirst())
            } else {
                out.append(contentsOf: word)
            }
            if i < count - 1, rng.chance(0.06) { out.append(0x2c) }
        }
        out.append(rng.chance(0.1) ? 0x3f : 0x2e)
    }

    /// Sentences up to at least `bytes` long.
    mutating func prose(into out: inout [UInt8], bytes: Int) {
        let end = out.count + bytes
        while out.count < end {
            sentence(into: &out)
            out.append(0x20)
        }
    }

    /// A given name from the list.
    mutating func name(into out: inout [UInt8]) {
        out.append(contentsOf: vocabulary.names[rng.below(vocabulary.names.count)])
    }

    /// A full name: given name and a made-up family name.
    mutating func fullName(into out: inout [UInt8]) {
        name(into: &out)
        out.append(0x20)
        let family = vocabulary.words[vocabulary.words.count / 2 + rng.below(vocabulary.words.count / 2)]
        out.append(family[0] >= 0x61 ? family[0] - 0x20 : family[0])
        out.append(contentsOf: family.dropFirst())
    }

    /// `name.word42@example.com` and the like.
    mutating func email(into out: inout [UInt8]) {
        for byte in vocabulary.names[rng.below(vocabulary.names.count)] {
            out.append(byte | 0x20)
        }
        out.append(0x2e)
        out.append(contentsOf: vocabulary.word(&rng))
        integer(into: &out, upTo: 100)
        out.append(0x40)
        out.append(contentsOf: Array(Self.domains[rng.below(Self.domains.count)].utf8))
    }

    /// A decimal integer below `bound`.
    mutating func integer(into out: inout [UInt8], upTo bound: Int) {
        out.append(contentsOf: Array(String(rng.below(bound)).utf8))
    }

    /// An RFC 4122 version-4 UUID in upper-case hex, as Foundation prints them.
    mutating func uuid(into out: inout [UInt8]) {
        hex(into: &out, count: 8, upper: true)
        for group in [4, 4, 4, 12] {
            out.append(0x2d)
            hex(into: &out, count: group, upper: true)
        }
    }

    /// `count` random hex digits.
    mutating func hex(into out: inout [UInt8], count: Int, upper: Bool = false) {
        let digits: [UInt8] = Array((upper ? "0123456789ABCDEF" : "0123456789abcdef").utf8)
        var bits = rng.next()
        for i in 0..<count {
            if i % 16 == 15 { bits = rng.next() }
            out.append(digits[Int(bits & 15)])
            bits >>= 4
        }
    }

    /// An ISO 8601 timestamp in 2023–2025, as JSON APIs and plists store them.
    mutating func isoDate(into out: inout [UInt8]) {
        let text = String(
            format: "%04d-%02d-%02dT%02d:%02d:%02dZ", 2023 + rng.below(3), 1 + rng.below(12),
            1 + rng.below(28), rng.below(24), rng.below(60), rng.below(60))
        out.append(contentsOf: Array(text.utf8))
    }

    /// A Unix timestamp in 2023–2025.
    mutating func unixTime() -> Int {
        1_672_531_200 + rng.below(3 * 365 * 86_400)
    }

    /// A key for a JSON object or a plist dictionary.
    mutating func key() -> [UInt8] {
        vocabulary.keys[rng.below(vocabulary.keys.count)]
    }

    /// A word from the vocabulary.
    mutating func word() -> [UInt8] {
        vocabulary.word(&rng)
    }

    /// An https URL on one of a few hosts, with a path of words and an identifier.
    mutating func url(into out: inout [UInt8]) {
        out.append(contentsOf: Array("https://".utf8))
        out.append(contentsOf: Array(Self.hosts[rng.below(Self.hosts.count)].utf8))
        for _ in 0..<rng.int(in: 1...3) {
            out.append(0x2f)
            out.append(contentsOf: vocabulary.word(&rng))
        }
        out.append(0x2f)
        hex(into: &out, count: 12)
    }

    private static let domains = ["example.com", "mail.example.org", "icloud.example", "corp.example.net"]
    private static let hosts = ["cdn.example.com", "api.example.com", "media.example.net", "img.example.org"]
}
