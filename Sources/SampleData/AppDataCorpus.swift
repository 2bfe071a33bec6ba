import Foundation

/// The appdata corpus, modelled on a phone app's container: a few SQLite databases, thousands of
/// cached JSON responses, photos and videos that do not compress, and preference plists.
///
/// At scale 1 it is about 364 MiB in some 5,600 files. `scale` multiplies every count and every
/// category's total, so per-file sizes (and so the texture the compressors see) stay the same.
/// Public because the benchmark packs it to compare compressors and `amk demo` migrates it: one
/// generator, so the data a user first sees migrated has the texture the published figures were
/// measured on.
public struct AppDataCorpus: Sendable {
    /// What the parts' totals add up to at scale 1 (90 + 70 + 190 + 14 MiB), so that a caller
    /// that wants a size rather than a scale can divide by it. A corpus comes within about 1% of
    /// `scale` times this, either side, not exactly: sizes are drawn, then scaled together and
    /// kept within each part's range, databases round up to whole pages, and every JSON document
    /// and plist ends on a whole item. Very small scales (under a MiB or so) come out larger:
    /// every part keeps at least one file, of at least its smallest size.
    public static let bytesAtScaleOne = 364 << 20

    /// Counts and totals relative to the full corpus (0.02 for a smoke test, 1 for the published figures).
    public let scale: Double
    /// Every file's bytes derive from it, so a corpus is the same on every machine and every run.
    public let seed: UInt64

    private static let mib = 1 << 20

    /// A corpus at `scale` from `seed`; nothing is generated until ``generate(into:)``.
    public init(scale: Double, seed: UInt64) {
        self.scale = scale
        self.seed = seed
    }

    /// Writes every file through `writer`: the same bytes for the same scale and seed.
    public func generate(into writer: inout CorpusWriter) throws {
        for part in Part.allCases {
            try generate(part, into: &writer)
        }
    }

    /// Writes one part's files through `writer`, for a caller that reports what each part came to
    /// (`writer.bytes` before and after). Each part draws from streams of its own, so the parts
    /// written one by one are the same bytes as ``generate(into:)`` writes.
    public func generate(_ part: Part, into writer: inout CorpusWriter) throws {
        switch part {
        case .databases: try databases(&writer)
        case .responses: try jsonDocuments(&writer)
        case .media: try media(&writer)
        case .plists: try plists(&writer)
        }
    }

    private func count(_ base: Int) -> Int {
        max(1, Int((Double(base) * scale).rounded()))
    }

    private func total(_ base: Int) -> Int {
        max(1, Int(Double(base) * scale))
    }

    /// ~90 MiB in three databases of text-heavy rows.
    private func databases(_ writer: inout CorpusWriter) throws {
        let files: [(String, DatabaseSynth.Table, Int)] = [
            ("Library/Application Support/Messages/Messages.sqlite", .messages, 50),
            ("Library/Application Support/Library.sqlite", .library, 25),
            ("Library/Caches/com.example.app/Cache.db", .cache, 15)
        ]
        for (index, (path, table, mebibytes)) in files.enumerated() {
            var synth = DatabaseSynth(table: table, rng: SplitMix64(seed: seed, stream: "database", index: index))
            try writer.write(path, synth.database(bytes: total(mebibytes * Self.mib)))
        }
    }

    /// 5,000 cached API responses of 1–50 KiB, ~70 MiB, in 256 hashed folders.
    private func jsonDocuments(_ writer: inout CorpusWriter) throws {
        var plan = SplitMix64(seed: seed, stream: "json-sizes", index: 0)
        let sizes = plan.sizes(count: count(5_000), total: total(70 * Self.mib), range: 1_024...51_200)
        for (index, size) in sizes.enumerated() {
            var text = TextSynth(rng: SplitMix64(seed: seed, stream: "json", index: index))
            var name: [UInt8] = []
            text.uuid(into: &name)
            let folder = String(decoding: name.prefix(2), as: UTF8.self)
            let file = String(decoding: name, as: UTF8.self) + ".json"
            let document = text.jsonDocument(bytes: size)
            try writer.write("Library/Caches/com.example.app/Responses/\(folder)/\(file)", document)
        }
    }

    /// ~200 photos and videos of 100 KiB–3 MiB, ~190 MiB: already compressed, so random bytes
    /// behind a real file signature.
    private func media(_ writer: inout CorpusWriter) throws {
        var plan = SplitMix64(seed: seed, stream: "media-sizes", index: 0)
        let sizes = plan.sizes(count: count(200), total: total(190 * Self.mib), range: 100 * 1_024...3 * Self.mib)
        let jpeg: [UInt8] = [0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01]
        let movie: [UInt8] = [0x00, 0x00, 0x00, 0x18, 0x66, 0x74, 0x79, 0x70, 0x71, 0x74, 0x20, 0x20]
        for (index, size) in sizes.enumerated() {
            var rng = SplitMix64(seed: seed, stream: "media", index: index)
            var bytes = [UInt8](repeating: 0, count: size)
            bytes.withUnsafeMutableBytes { rng.fill($0) }
            let isMovie = index % 5 == 4
            bytes.replaceSubrange(0..<12, with: isMovie ? movie : jpeg)
            let name = String(format: isMovie ? "IMG_%04d.MOV" : "IMG_%04d.JPG", 1000 + index)
            try writer.write("Documents/Media/\(100 + index / 50)APPLE/\(name)", bytes)
        }
    }

    /// ~400 XML property lists, ~14 MiB: preferences and saved state.
    private func plists(_ writer: inout CorpusWriter) throws {
        var plan = SplitMix64(seed: seed, stream: "plist-sizes", index: 0)
        let sizes = plan.sizes(count: count(400), total: total(14 * Self.mib), range: 1_024...400 * 1_024)
        for (index, size) in sizes.enumerated() {
            var text = TextSynth(rng: SplitMix64(seed: seed, stream: "plist", index: index))
            let word = String(decoding: text.word(), as: UTF8.self)
            let path =
                index % 4 == 0
                ? "Library/Preferences/com.example.app.\(word).\(index).plist"
                : "Library/Application Support/State/\(word)-\(index).plist"
            try writer.write(path, text.plist(bytes: size))
        }
    }
}
