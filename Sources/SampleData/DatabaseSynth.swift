/// Builds SQLite-like database files: 4 KiB pages of B-tree cells holding text-heavy rows.
///
/// Not a database SQLite could open, but the same texture as one, which is what a compressor
/// sees: a file header, page headers, cell pointer arrays, varints and big-endian integers
/// between the rows' text, index pages of sorted keys, and free space left as zeros.
struct DatabaseSynth: Sendable {
    /// What the rows are about; each table has its own columns.
    enum Table: String, CaseIterable, Sendable {
        case messages, library, cache
    }

    static let pageSize = 4096
    var text: TextSynth
    let table: Table

    init(table: Table, rng: SplitMix64) {
        self.table = table
        text = TextSynth(rng: rng)
    }

    /// A database of `bytes` bytes (rounded up to whole pages, two at least).
    mutating func database(bytes: Int) -> [UInt8] {
        let pages = max(2, (bytes + Self.pageSize - 1) / Self.pageSize)
        var out: [UInt8] = []
        out.reserveCapacity(pages * Self.pageSize)
        out += headerPage(pages: pages)
        var rowid = 1
        for _ in 1..<pages {
            switch text.rng.below(20) {
            case 0:
                // A free page: SQLite leaves them zeroed, or with stale data; zeros here.
                out += [UInt8](repeating: 0, count: Self.pageSize)
            case 1, 2:
                out += indexPage()
            default:
                out += tablePage(rowid: &rowid)
            }
        }
        return out
    }

    private mutating func headerPage(pages: Int) -> [UInt8] {
        var page = [UInt8](repeating: 0, count: Self.pageSize)
        let magic = Array("SQLite format 3\0".utf8)
        page.replaceSubrange(0..<16, with: magic)
        put16(&page, 16, UInt16(Self.pageSize))
        page[18] = 1
        page[19] = 1
        page[20] = 0
        page[21] = 64
        page[22] = 32
        page[23] = 32
        put32(&page, 28, UInt32(pages))
        put32(&page, 44, 4)
        put32(&page, 56, 1)
        put32(&page, 96, 3_045_001)
        var schema: [UInt8] = []
        for (i, table) in Table.allCases.enumerated() {
            schema += Array("CREATE TABLE \(table.rawValue)(id INTEGER PRIMARY KEY, \(columns(table))); ".utf8)
            schema += Array("CREATE INDEX \(table.rawValue)_idx_\(i) ON \(table.rawValue)(created); ".utf8)
        }
        let kept = schema.prefix(Self.pageSize - 300)
        page.replaceSubrange(200..<(200 + kept.count), with: kept)
        return page
    }

    private func columns(_ table: Table) -> String {
        switch table {
        case .messages: "conversation INTEGER, sender TEXT, address TEXT, created INTEGER, body TEXT, status TEXT"
        case .library: "title TEXT, author TEXT, url TEXT, created INTEGER, summary TEXT, tags TEXT"
        case .cache: "request TEXT, headers TEXT, created INTEGER, expires INTEGER, response TEXT"
        }
    }

    /// A table leaf page (type 13): cells grow down from the end, pointers up from the header.
    private mutating func tablePage(rowid: inout Int) -> [UInt8] {
        var page = [UInt8](repeating: 0, count: Self.pageSize)
        var contentStart = Self.pageSize
        var cells = 0
        while true {
            var cell: [UInt8] = []
            let payload = record()
            varint(UInt64(payload.count), &cell)
            varint(UInt64(rowid), &cell)
            cell += payload
            let pointerEnd = 8 + 2 * (cells + 1)
            // Rows bigger than a page would go to overflow pages; keep them short instead.
            guard cell.count < Self.pageSize / 2, contentStart - cell.count >= pointerEnd else { break }
            contentStart -= cell.count
            page.replaceSubrange(contentStart..<(contentStart + cell.count), with: cell)
            put16(&page, 8 + 2 * cells, UInt16(contentStart))
            cells += 1
            rowid += 1
        }
        page[0] = 13
        put16(&page, 3, UInt16(cells))
        put16(&page, 5, UInt16(contentStart))
        return page
    }

    /// An index leaf page (type 10): sorted short keys with their rowids.
    private mutating func indexPage() -> [UInt8] {
        var page = [UInt8](repeating: 0, count: Self.pageSize)
        var keys: [[UInt8]] = []
        for _ in 0..<text.rng.int(in: 80...160) {
            var key: [UInt8] = []
            if table == .messages { text.email(into: &key) } else { key = text.word() + text.word() }
            keys.append(key)
        }
        keys.sort { $0.lexicographicallyPrecedes($1) }
        var contentStart = Self.pageSize
        var cells = 0
        for key in keys {
            var payload: [UInt8] = []
            varint(UInt64(13 + 2 * key.count), &payload)
            payload.append(4)
            payload = [UInt8(payload.count + 1)] + payload
            payload += key
            append32(&payload, UInt32(text.rng.below(1_000_000)))
            var cell: [UInt8] = []
            varint(UInt64(payload.count), &cell)
            cell += payload
            guard contentStart - cell.count >= 8 + 2 * (cells + 1) else { break }
            contentStart -= cell.count
            page.replaceSubrange(contentStart..<(contentStart + cell.count), with: cell)
            put16(&page, 8 + 2 * cells, UInt16(contentStart))
            cells += 1
        }
        page[0] = 10
        put16(&page, 3, UInt16(cells))
        put16(&page, 5, UInt16(contentStart))
        return page
    }

    /// One row as a SQLite record: a header of serial types, then the values.
    private mutating func record() -> [UInt8] {
        let values: [Value]
        switch table {
        case .messages:
            values = [
                .int(text.rng.below(5_000)), .text(Self.fullName), .text(Self.email), .int(text.unixTime()),
                .text { Self.prose(&$0, &$1, 20...700) }, .text(Self.status)
            ]
        case .library:
            values = [
                .text(Self.title), .text(Self.fullName), .text(Self.url), .int(text.unixTime()),
                .text { Self.prose(&$0, &$1, 60...1200) }, .text(Self.tags)
            ]
        case .cache:
            values = [
                .text(Self.url), .text(Self.headers), .int(text.unixTime()), .int(text.unixTime()),
                .text(Self.response)
            ]
        }
        var header: [UInt8] = []
        var body: [UInt8] = []
        for value in values {
            switch value {
            case .int(let number):
                header.append(4)
                append32(&body, UInt32(truncatingIfNeeded: number))
            case .text(let make):
                var bytes: [UInt8] = []
                make(&text, &bytes)
                varint(UInt64(13 + 2 * bytes.count), &header)
                body += bytes
            }
        }
        var sizeBytes: [UInt8] = []
        varint(UInt64(header.count + 1), &sizeBytes)
        return sizeBytes + header + body
    }

    // Column makers, as functions rather than closures so that each borrows the synth once.
    private static func fullName(_ text: inout TextSynth, _ out: inout [UInt8]) { text.fullName(into: &out) }
    private static func email(_ text: inout TextSynth, _ out: inout [UInt8]) { text.email(into: &out) }
    private static func url(_ text: inout TextSynth, _ out: inout [UInt8]) { text.url(into: &out) }

    private static func prose(_ text: inout TextSynth, _ out: inout [UInt8], _ range: ClosedRange<Int>) {
        let length = text.rng.logUniform(range.lowerBound, range.upperBound)
        text.prose(into: &out, bytes: length)
    }

    private static func status(_ text: inout TextSynth, _ out: inout [UInt8]) {
        out += Array(["delivered", "read", "sent", "failed"][text.rng.below(4)].utf8)
    }

    private static func title(_ text: inout TextSynth, _ out: inout [UInt8]) {
        for i in 0..<text.rng.int(in: 2...6) {
            if i > 0 { out.append(0x20) }
            out += text.word()
        }
    }

    private static func tags(_ text: inout TextSynth, _ out: inout [UInt8]) {
        for i in 0..<text.rng.int(in: 1...4) {
            if i > 0 { out.append(0x2c) }
            out += text.word()
        }
    }

    private static func headers(_ text: inout TextSynth, _ out: inout [UInt8]) {
        out += Array("content-type: application/json\r\ncache-control: max-age=".utf8)
        text.integer(into: &out, upTo: 86_400)
        out += Array("\r\netag: \"".utf8)
        text.hex(into: &out, count: 16)
        out.append(0x22)
    }

    private static func response(_ text: inout TextSynth, _ out: inout [UInt8]) {
        let length = text.rng.logUniform(200, 1800)
        out += text.jsonDocument(bytes: length)
    }

    private enum Value {
        case int(Int)
        case text((inout TextSynth, inout [UInt8]) -> Void)
    }

    /// SQLite's big-endian varint: 7 bits a byte, high bit set on all but the last.
    private func varint(_ value: UInt64, _ out: inout [UInt8]) {
        var groups: [UInt8] = [UInt8(value & 0x7f)]
        var rest = value >> 7
        while rest > 0 {
            groups.append(UInt8(rest & 0x7f) | 0x80)
            rest >>= 7
        }
        out += groups.reversed()
    }

    private func put16(_ bytes: inout [UInt8], _ offset: Int, _ value: UInt16) {
        bytes[offset] = UInt8(value >> 8)
        bytes[offset + 1] = UInt8(value & 0xff)
    }

    private func put32(_ bytes: inout [UInt8], _ offset: Int, _ value: UInt32) {
        for i in 0..<4 { bytes[offset + i] = UInt8((value >> (24 - 8 * UInt32(i))) & 0xff) }
    }

    private func append32(_ bytes: inout [UInt8], _ value: UInt32) {
        for i in 0..<4 { bytes.append(UInt8((value >> (24 - 8 * UInt32(i))) & 0xff)) }
    }
}
