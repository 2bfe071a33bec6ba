import ArgumentParser
import Foundation
import IndexedArchive
import SampleData

/// `amk-bench cancel`: how long a cancelled pack takes to return, and how late the watchdog
/// reports a stall, measured in this process with the engine's library API.
///
/// Each run packs a text corpus (so the compressors are mid-block when the cancel comes),
/// cancels at a random moment, and times cancel() to the throw. The stall runs watch a stage that
/// never progresses while every core compresses, and time the report against the timeout.
struct CancelCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cancel",
        abstract: "Measure cancel-to-return latency of a pack and the watchdog's stall-detection delay."
    )

    @Option(help: "Cancellations per preset (at least 200 for a p99 worth reading).")
    var runs = 200

    @Option(parsing: .upToNextOption, help: "Presets to measure.")
    var presets: [Int] = [1, 6]

    @Option(help: "Size of the generated text corpus in MiB.")
    var sizeMib = 48

    @Option(help: "Stall timeout for the stall-detection runs, in milliseconds.")
    var stallTimeoutMs = 200

    @Option(help: "Stall-detection runs.")
    var stallRuns = 20

    @Option(help: "Write every measurement here as JSON.")
    var json: String?

    struct Report: Codable {
        var latenciesMs: [String: [Double]]
        var stallDelaysMs: [Double]
        var stallTimeoutMs: Int
    }

    func run() async throws {
        // As amk does: what is measured is the engine under the CLI's allocator setting.
        AllocatorTuning.apply()
        let root = try makeCorpus()
        defer { try? FileManager.default.removeItem(atPath: root) }
        var rng = SplitMix64(seed: 0xCA7CE1)
        var report = Report(latenciesMs: [:], stallDelaysMs: [], stallTimeoutMs: stallTimeoutMs)
        for preset in presets {
            var latencies: [Double] = []
            for index in 0..<runs {
                let destination = root + ".out-\(index).tar.xz"
                var options = PackOptions()
                options.preset = preset
                options.stallPolicy = nil
                let packOptions = options
                let task = Task {
                    try await ArchivePacker.pack([PackSource(path: root, archivePath: "c")], to: .file(destination), options: packOptions)
                }
                try await Task.sleep(for: .milliseconds(20 + rng.below(400)))
                let start = ContinuousClock.now
                task.cancel()
                let result = await task.result
                let elapsed = ContinuousClock.now - start
                if case .success = result {
                    try? FileManager.default.removeItem(atPath: destination)
                    continue  // finished before the cancel: not a cancellation
                }
                latencies.append(elapsed.millisecondsValue)
            }
            report.latenciesMs["preset \(preset)"] = latencies
            print(Self.line("cancel-to-return, preset \(preset)", latencies))
        }
        report.stallDelaysMs = try await measureStalls(root: root)
        print(Self.line("stall reported after timeout + (timeout \(stallTimeoutMs) ms)", report.stallDelaysMs))
        if let json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(report).write(to: URL(fileURLWithPath: json))
        }
    }

    /// Every core compresses a pack while a supervised stage stays silent; the delay is how long
    /// after its timeout the stall reached the caller.
    func measureStalls(root: String) async throws -> [Double] {
        var delays: [Double] = []
        let timeout = Duration.milliseconds(stallTimeoutMs)
        let policy = WatchdogPolicy(defaultStallTimeout: timeout, gracePeriod: .seconds(10))
        for index in 0..<stallRuns {
            let destination = root + ".load-\(index).tar.xz"
            var load = PackOptions()
            load.stallPolicy = nil
            let loadOptions = load
            let background = Task {
                try await ArchivePacker.pack([PackSource(path: root, archivePath: "c")], to: .file(destination), options: loadOptions)
            }
            try await Task.sleep(for: .milliseconds(200))
            let start = ContinuousClock.now
            do {
                try await Watchdog.supervise(policy: policy) { watchdog in
                    watchdog.begin(.read)
                    try await Task.sleep(for: .seconds(60))
                }
            } catch let error as ArchiveError where error.code == .stalled {
                delays.append((ContinuousClock.now - start - timeout).millisecondsValue)
            }
            background.cancel()
            _ = await background.result
            try? FileManager.default.removeItem(atPath: destination)
        }
        return delays
    }

    /// Text-like files, deterministic, so that compression is busy when the cancel arrives.
    func makeCorpus() throws -> String {
        let root = NSTemporaryDirectory() + "amk-bench-cancel-\(getpid())"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        var rng = SplitMix64(seed: 0x7E57)
        let words = ["session", "token", "user", "note", "title", "created", "modified", "sync", "true", "false",
                     "null", "{", "}", "[", "]", ":", ",", "\"id\"", "\"body\"", "\"tags\"", "1024", "0.25", "\n"]
        let fileSize = 4 << 20
        for file in 0..<max(1, sizeMib / 4) {
            var text = [UInt8]()
            text.reserveCapacity(fileSize)
            while text.count < fileSize {
                text.append(contentsOf: words[rng.below(words.count)].utf8)
                text.append(contentsOf: String(rng.below(100_000)).utf8)
                text.append(32)
            }
            _ = FileManager.default.createFile(atPath: "\(root)/file\(file).json", contents: Data(text.prefix(fileSize)))
        }
        return root
    }

    static func line(_ label: String, _ values: [Double]) -> String {
        guard !values.isEmpty else { return "\(label): no measurements" }
        let sorted = values.sorted()
        func percentile(_ p: Double) -> Double { sorted[min(sorted.count - 1, Int((p * Double(sorted.count)).rounded(.up)) - 1)] }
        return "\(label): " + String(format: "n=%d  p50 %.1f ms  p99 %.1f ms  max %.1f ms", sorted.count,
                                             percentile(0.5), percentile(0.99), sorted.last!)
    }
}

extension Duration {
    var millisecondsValue: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) * 1000 + Double(attoseconds) / 1e15
    }
}
