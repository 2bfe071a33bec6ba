import Foundation

/// Everything a session measured: settings, corpus, every run, and the summaries; written as
/// JSON with `--json` and printed as tables.
struct BenchReport: Codable, Sendable {
    struct Host: Codable, Sendable {
        var cores: Int
        var system: String
    }

    struct Settings: Codable, Sendable {
        var corpus: String
        /// nil for a directory given by the user.
        var scale: Double?
        var runs: Int
        var preset: Int
        var workers: Int
        var members: Int
    }

    struct Corpus: Codable, Sendable {
        var path: String
        var files: Int
        var directories: Int
        var contentBytes: Int
        var gnuTarBytes: Int
        var amkTarBytes: Int?
        var amkBlocks: Int?
        var amkStoredBlocks: Int?
    }

    var generator = "amk-bench"
    var date: String
    var host: Host
    var settings: Settings
    var corpus: Corpus
    var toolVersions: [String: String]
    var summaries: [ToolSummary]
    var comparisons: [Comparison]
    var notes: [String]
    var runs: [RunRecord]

    init(benchmark: Benchmark, settings: Settings, toolVersions: [String: String]) {
        date = ISO8601DateFormatter().string(from: Date())
        host = Host(cores: ProcessInfo.processInfo.activeProcessorCount,
                    system: ProcessInfo.processInfo.operatingSystemVersionString)
        self.settings = settings
        let stats = benchmark.stats
        corpus = Corpus(path: benchmark.config.corpusPath, files: stats.files.count, directories: stats.directories,
                        contentBytes: stats.contentBytes, gnuTarBytes: benchmark.gnuTarBytes,
                        amkTarBytes: benchmark.amkTarBytes, amkBlocks: benchmark.amkBlocks,
                        amkStoredBlocks: benchmark.amkStoredBlocks)
        self.toolVersions = toolVersions
        runs = benchmark.records
        notes = benchmark.notes
        summaries = benchmark.lineup.map { entry in
            ToolSummary(phase: entry.phase, tool: entry.tool, unavailable: entry.unavailable,
                        records: benchmark.records.filter { $0.phase == entry.phase && $0.tool == entry.tool })
        }
        comparisons = BenchReport.comparisons(runs, workers: settings.workers,
                                              lineup: benchmark.lineup.map { ($0.phase, $0.tool) })
    }

    /// The within-round ratios the issue asks for: our speed against each peer, our parallel
    /// efficiency, and our reader against the stock tools on the same archive.
    private static func comparisons(_ runs: [RunRecord], workers: Int,
                                    lineup: [(phase: RunRecord.Phase, tool: String)]) -> [Comparison] {
        func peers(_ phase: RunRecord.Phase, excluding ours: String) -> [String] {
            lineup.filter { $0.phase == phase && $0.tool != ours }.map(\.tool)
        }
        typealias Label = Benchmark.Label
        let wall: (RunRecord) -> Double? = { $0.usage.wallSeconds }
        let rate: (RunRecord) -> Double? = { run in run.inputBytes.map { Double($0) / run.usage.wallSeconds } }
        var result: [Comparison] = []
        for peer in peers(.pack, excluding: Label.amk) {
            result.append(Comparison("amk speed-up over \(peer) (their wall / ours)", phase: .pack, records: runs,
                                     numerator: peer, denominator: Label.amk, value: wall))
        }
        result.append(Comparison("amk \(workers)-core efficiency: MiB/s / (\(workers) × amk 1-worker MiB/s)",
                                 phase: .pack, records: runs, numerator: Label.amk, denominator: Label.amkSingle,
                                 factor: Double(workers), value: rate))
        result.append(Comparison("amk MiB/s / (\(workers) × tar | xz -T1 MiB/s)", phase: .pack, records: runs,
                                 numerator: Label.amk, denominator: Label.xzSingle, factor: Double(workers),
                                 value: rate))
        let bytes: (RunRecord) -> Double? = { $0.outputBytes.map(Double.init) }
        let rss: (RunRecord) -> Double? = { Double($0.usage.peakRSSBytes) }
        for peer in [Label.xzSingle, Label.xzParallel(workers), Label.pixz] {
            result.append(Comparison("amk archive bytes / \(peer) archive bytes", phase: .pack, records: runs,
                                     numerator: Label.amk, denominator: peer, value: bytes))
        }
        for peer in [Label.xzParallel(workers), Label.pixz] {
            result.append(Comparison("amk peak RSS / \(peer) peak RSS", phase: .pack, records: runs,
                                     numerator: Label.amk, denominator: peer, value: rss))
        }
        // Each amk reading against the stock pipeline on the same archive.
        let extractPairs = [
            (Label.amkExtract, Label.xzExtract(workers, archive: "amk")),
            (Label.amkExtractPipe, Label.xzExtract(workers, archive: "amk")),
            (Label.amkExtractForeign(workers), Label.xzExtract(workers, archive: "xz -T\(workers)")),
            (Label.amkExtractPixz, Label.pixzExtract),
        ]
        for (ours, peer) in extractPairs {
            result.append(Comparison("\(ours) speed-up over \(peer)", phase: .extract, records: runs,
                                     numerator: peer, denominator: ours, value: wall))
        }
        for peer in peers(.extractOne, excluding: Label.amkExtract) {
            result.append(Comparison("amk extract latency speed-up over \(peer)", phase: .extractOne, records: runs,
                                     numerator: peer, denominator: Label.amkExtract, value: wall))
        }
        for peer in peers(.list, excluding: Label.amkList) {
            result.append(Comparison("amk list speed-up over \(peer)", phase: .list, records: runs,
                                     numerator: peer, denominator: Label.amkList, value: wall))
        }
        return result
    }
}
