extension AppDataCorpus {
    /// The kinds of data the corpus holds, in the order ``AppDataCorpus/generate(into:)`` writes
    /// them. Named so that a caller can say what a container is made of: a migration's speed and
    /// ratio depend on the mix (text compresses 3-5x, media not at all).
    public enum Part: String, CaseIterable, Sendable {
        /// Three SQLite-like databases of text-heavy rows, about 90 MiB at scale 1.
        case databases
        /// 5,000 cached JSON API responses of 1-50 KiB, about 70 MiB at scale 1.
        case responses
        /// About 200 photos and videos behind real file signatures, about 190 MiB at scale 1:
        /// already compressed, so random bytes.
        case media
        /// About 400 XML property lists (preferences and saved state), about 14 MiB at scale 1.
        case plists
    }
}
