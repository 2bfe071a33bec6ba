import AppMigration
import ArgumentParser
import Foundation

/// The options and the setup the host benchmarks (`transfer`, `extensions`) share: a corpus
/// copied in as a source container's `Documents`, rounds, and the preset.
struct ContainerCorpus: ParsableArguments {
    @Option(help: "appdata, smallfiles, or the path of a directory to use (as the container's Documents).")
    var corpus: CorpusKind = .appdata

    @Option(help: "Size of a generated corpus relative to its full size.")
    var scale: Double = 0.25

    @Option(help: "Rounds: each way runs once per round.")
    var runs = 3

    @Option(help: "LZMA preset.")
    var preset = 6

    @Option(help: "Where generated corpora are cached.")
    var cacheDir: String = "/tmp"

    /// A source container under `work` whose `Documents` is a copy of the corpus, and the bytes it holds.
    func sourceContainer(in work: URL, log: (String) -> Void) throws -> (container: MigrationDataContainer, bytes: Int) {
        let corpusPath = try CorpusCache(cacheRoot: cacheDir).directory(for: corpus, scale: scale, log: log)
        let source = MigrationDataContainer(bundleIdentifier: "bench.source", containerRootDirectory: work.appending(path: "src"))
        try source.createStandardDirectories()
        try FileManager.default.removeItem(at: source.documentsDirectory)
        log("copying \(corpusPath) into the source container")
        try FileManager.default.copyItem(at: URL(fileURLWithPath: corpusPath), to: source.documentsDirectory)
        return (source, try TransferCommand.size(of: source.documentsDirectory))
    }
}
