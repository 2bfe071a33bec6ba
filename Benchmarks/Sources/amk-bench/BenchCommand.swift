import ArgumentParser
import Foundation
import IndexedArchive

/// `amk-bench [run]`: generate or find the corpus, measure every tool, print the tables.
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Measure pack, extraction and listing of a corpus with amk, tar | xz and pixz.",
        discussion: """
            Generated corpora are cached in <cache-dir>/amk-bench-corpus-<name>-<scale> and reused. \
            Tools run in rounds, alternating, and the tables give medians with [min–max]. Progress \
            goes to stderr, the tables to stdout.
            """
    )

    @Option(help: "appdata, smallfiles, or the path of a directory to pack.")
    var corpus: CorpusKind = .appdata

    @Option(help: """
        Size of a generated corpus relative to its full size (1: ~364 MiB of appdata, 100,000 small \
        files). Default 1, or 0.02 with --quick.
        """)
    var scale: Double?

    @Option(help: "Rounds: every tool runs once per round. Default 3, or 1 with --quick.")
    var runs: Int?

    @Flag(help: "A smoke test for CI: scale 0.02, one round, a few members.")
    var quick = false

    @Option(help: "LZMA preset for every tool.")
    var preset = 6

    @Option(help: "amk's compressing workers and the peers' thread count (the active cores by default).")
    var workers = PackOptions.activeCores

    @Option(help: "Members per round for one-member extraction. Default 12, or 4 with --quick.")
    var members: Int?

    @Option(help: "MiB of the one block that 100 members are extracted from, against one member. Default 64, or 8 with --quick.")
    var selectionBlock: Int?

    @Option(help: "Write every run and the summaries as JSON to this file.")
    var json: String?

    @Option(help: "Where generated corpora are cached.")
    var cacheDir: String = "/tmp"

    @Option(
        help: """
            Where the archives are written and extracted (default: $TMPDIR, else /tmp). On tmpfs \
            (/dev/shm) no disk writeback throttles the extractions.
            """)
    var workDir: String?

    @Option(help: "The amk CLI for our listing and extraction. Default: the root's .build/release/amk, then PATH.")
    var amk: String?

    @Flag(help: "Keep the archives written (their folder is printed).")
    var keep = false

    @Flag(help: "Only generate (or find) the corpus and print its path.")
    var corpusOnly = false

    func validate() throws {
        if let scale, !(scale > 0 && scale <= 10) { throw ValidationError("--scale must be in (0, 10], not \(scale)") }
        if let runs, runs < 1 { throw ValidationError("--runs must be at least 1") }
        if !(0...9).contains(preset) { throw ValidationError("--preset must be 0 to 9") }
        if workers < 1 { throw ValidationError("--workers must be at least 1") }
        if let members, members < 0 { throw ValidationError("--members must not be negative") }
        if let selectionBlock, selectionBlock < 4 || selectionBlock > 1024 {
            throw ValidationError("--selection-block must be 4 to 1024 MiB")
        }
    }

    func run() async throws {
        // As amk does: what is measured is the engine under the CLI's allocator setting.
        AllocatorTuning.apply()
        let scale = self.scale ?? (quick ? 0.02 : 1)
        let runs = self.runs ?? (quick ? 1 : 3)
        let members = self.members ?? (quick ? 4 : 12)
        let log: (String) -> Void = { FileHandle.standardError.write(Data(("amk-bench: " + $0 + "\n").utf8)) }

        let tree = try CorpusCache(cacheRoot: cacheDir).directory(for: corpus, scale: scale, log: log)
        if corpusOnly {
            print(tree)
            return
        }
        let name = (tree as NSString).lastPathComponent
        let stats = try CorpusStats(root: tree, prefix: name)
        if stats.symlinks > 0 { log("note: \(stats.symlinks) symlinks in the corpus are packed as links") }

        // Not the corpus cache, which is meant to last: the work is hundreds of MiB written and
        // removed each round, and on a disk the kernel's writeback of the last round's files
        // throttled the next extractions to a third of their speed (measured 2026-11-26).
        let work = URL(fileURLWithPath: workDir ?? NSTemporaryDirectory())
            .appending(path: "amk-bench-work-\(getpid())").path(percentEncoded: false)
        defer {
            if keep { log("archives kept in \(work)") } else { try? FileManager.default.removeItem(atPath: work) }
        }
        let benchmark = Benchmark(
            config: .init(corpusPath: tree, runs: runs, preset: preset, workers: workers, members: members,
                          workDirectory: work, selfExecutable: Self.executablePath(), amkCLI: Self.locateCLI(amk)),
            stats: stats, log: log)
        try benchmark.run()

        let isDirectory: Bool = if case .directory = corpus { true } else { false }
        let report = BenchReport(
            benchmark: benchmark,
            settings: .init(corpus: isDirectory ? "directory" : corpus.description, scale: isDirectory ? nil : scale,
                            runs: runs, preset: preset, workers: workers, members: members),
            toolVersions: Self.toolVersions(amkCLI: Self.locateCLI(amk)))
        print(report.text(), terminator: "")
        // 100 members of one block against one member of it.
        let selection = try await SelectionBenchmark(blockBytes: (selectionBlock ?? (quick ? 8 : 64)) << 20, preset: preset, workDirectory: work)
            .run(log: log)
        print(selection.text)
        if let json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(report).write(to: URL(fileURLWithPath: json))
            log("wrote \(json)")
        }
        // Our pack must work: a CI smoke test should fail when it does not. A peer that fails
        // (a missing or broken tool) is reported but does not fail the run.
        let ourPackFailed = benchmark.records.contains {
            $0.phase == .pack && $0.tool == Benchmark.Label.amk && $0.failure != nil
        }
        if ourPackFailed {
            throw ExitCode(1)
        }
    }

    /// This binary's path, to re-execute it as `_pack`.
    static func executablePath() -> String {
        if let resolved = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            return resolved
        }
        return Bundle.main.executablePath ?? CommandLine.arguments[0]
    }

    /// The `amk` CLI: the one given, or the root package's release (then debug) build, found from
    /// the working directory or from this binary's place in Benchmarks/.build, or `amk` on PATH.
    static func locateCLI(_ given: String?) -> String? {
        if let given { return given }
        let cwd = FileManager.default.currentDirectoryPath
        // This binary sits in <root>/Benchmarks/.build/<triple>/<configuration>/amk-bench.
        let root = URL(fileURLWithPath: executablePath()).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path
        for base in [cwd, "\(cwd)/..", root] {
            for configuration in ["release", "debug"] {
                let candidate = "\(base)/.build/\(configuration)/amk"
                if FileManager.default.isExecutableFile(atPath: candidate) {
                    return URL(fileURLWithPath: candidate).standardizedFileURL.path
                }
            }
        }
        return Benchmark.which("amk")
    }

    /// The first line of each tool's version, for the JSON.
    static func toolVersions(amkCLI: String?) -> [String: String] {
        var versions: [String: String] = [:]
        let probes = [("tar", "tar --version"), ("xz", "xz --version"), ("pixz", "pixz -h 2>&1 | grep '^pixz [0-9]'")]
        for (name, command) in probes where Benchmark.which(name) != nil {
            let out = "/tmp/amk-bench-version-\(getpid())"
            defer { try? FileManager.default.removeItem(atPath: out) }
            if (try? ChildProcess.run(command, stdout: out))?.exitStatus == 0 {
                versions[name] = Benchmark.firstLine(of: out)
            }
        }
        if let amkCLI { versions["amk"] = amkCLI }
        versions["amk engine"] = ArchivePacker.writerVersion
        return versions
    }
}
