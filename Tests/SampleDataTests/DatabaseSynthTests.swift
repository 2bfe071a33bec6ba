import Testing

@testable import SampleData

/// The databases have SQLite's page structure, which is what gives them SQLite's compression
/// (binary headers and pointers between runs of text, zeroed free space).
struct DatabaseSynthTests {
    private func read16(_ bytes: ArraySlice<UInt8>, _ offset: Int) -> Int {
        Int(bytes[bytes.startIndex + offset]) << 8 | Int(bytes[bytes.startIndex + offset + 1])
    }

    @Test(arguments: DatabaseSynth.Table.allCases)
    func pagesAreWholeAndWellFormed(table: DatabaseSynth.Table) {
        var synth = DatabaseSynth(table: table, rng: SplitMix64(seed: 5))
        let database = synth.database(bytes: 300_000)
        let pageSize = DatabaseSynth.pageSize
        #expect(database.count % pageSize == 0)
        #expect(database.count >= 300_000 && database.count < 300_000 + pageSize)
        #expect(Array(database.prefix(16)) == Array("SQLite format 3\0".utf8))
        #expect(read16(database[...], 16) == pageSize)
        let pages = database.count / pageSize
        let recorded = database[28..<32].reduce(0) { $0 << 8 | Int($1) }
        #expect(recorded == pages)
        var kinds: [UInt8: Int] = [:]
        for index in 1..<pages {
            let page = database[(index * pageSize)..<((index + 1) * pageSize)]
            let kind = page[page.startIndex]
            kinds[kind, default: 0] += 1
            guard kind != 0 else {
                #expect(page.allSatisfy { $0 == 0 }, "a free page is zeros")
                continue
            }
            #expect([10, 13].contains(kind))
            // A leaf may be empty: a cache row whose response is over half a page ends its page
            // (rows that big would go to overflow pages in SQLite).
            let cells = read16(page, 3)
            let contentStart = read16(page, 5)
            #expect(contentStart >= 8 + 2 * cells && contentStart <= pageSize)
            #expect(cells > 0 || contentStart == pageSize)
            // Every cell pointer lands in the content area.
            for cell in 0..<cells {
                #expect((contentStart..<pageSize).contains(read16(page, 8 + 2 * cell)))
            }
        }
        #expect(kinds[13, default: 0] > kinds[10, default: 0], "table pages outnumber index pages: \(kinds)")
        #expect(kinds[0, default: 0] > 0, "a few pages are free")
    }

    @Test func sameSeedSameDatabase() {
        func make(_ seed: UInt64) -> [UInt8] {
            var synth = DatabaseSynth(table: .messages, rng: SplitMix64(seed: seed))
            return synth.database(bytes: 40_000)
        }
        #expect(make(6) == make(6))
        #expect(make(6) != make(7))
    }

    @Test func tinyRequestsStillGetTwoPages() {
        var synth = DatabaseSynth(table: .cache, rng: SplitMix64(seed: 8))
        #expect(synth.database(bytes: 1).count == 2 * DatabaseSynth.pageSize)
    }
}
