/// The smallfiles corpus: 100,000 text files of 100 B–8 KiB in nested folders, the shape that
/// stresses per-member costs (headers, directory walking, listing) rather than compression.
/// Public for the benchmark, which measures exactly those costs with it.
public struct SmallFilesCorpus: Sendable {
    /// The number of files relative to 100,000 (each file's size does not scale).
    public let scale: Double
    /// Every file's bytes derive from it, so a corpus is the same on every machine and every run.
    public let seed: UInt64

    /// A corpus at `scale` from `seed`; nothing is generated until ``generate(into:)``.
    public init(scale: Double, seed: UInt64) {
        self.scale = scale
        self.seed = seed
    }

    /// Writes every file through `writer`: the same bytes for the same scale and seed.
    public func generate(into writer: inout CorpusWriter) throws {
        let count = max(1, Int((Double(100_000) * scale).rounded()))
        let extensions = ["txt", "md", "json", "swift", "csv", "log"]
        for index in 0..<count {
            var text = TextSynth(rng: SplitMix64(seed: seed, stream: "small", index: index))
            // About 200 files a folder, two or three levels deep, named like a project's tree.
            let folder = index / 200
            let top = Self.word(folder / 25 % 100)
            let middle = Self.word(100 + folder % 25)
            let leaf = folder % 3 == 0 ? "/" + Self.word(200 + folder % 50) : ""
            let fileExtension = extensions[text.rng.below(extensions.count)]
            let name = "\(String(decoding: text.word(), as: UTF8.self))-\(index).\(fileExtension)"
            let size = text.rng.logUniform(100, 8_192)
            let contents: [UInt8]
            switch fileExtension {
            case "json": contents = text.jsonDocument(bytes: size)
            case "swift": contents = text.code(bytes: size)
            case "csv": contents = text.csv(bytes: size)
            case "log": contents = text.log(bytes: size)
            default:
                var prose: [UInt8] = []
                text.prose(into: &prose, bytes: size)
                contents = prose
            }
            try writer.write("src/\(top)/\(middle)\(leaf)/\(name)", Array(contents.prefix(8_192)))
        }
    }

    /// The vocabulary's word of that rank, for folder names.
    private static func word(_ rank: Int) -> String {
        String(decoding: Vocabulary.shared.words[rank], as: UTF8.self)
    }
}
