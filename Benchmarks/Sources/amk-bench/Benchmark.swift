import Foundation
import IndexedArchive
import XZ

/// One benchmark session: builds each phase's contenders, runs them in alternating rounds, and
/// keeps every run.
///
/// The machine is small (2 cores) and shared, so its speed drifts while we measure. Each round
/// runs every tool once, in an order rotated by one each round, and the report compares tools
/// within a round before taking medians: a slow minute then slows both sides of a ratio.
final class Benchmark {
    struct Configuration {
        /// The tree to pack.
        var corpusPath: String
        var runs: Int
        var preset: Int
        var workers: Int
        /// Members per round for one-member extraction.
        var members: Int
        /// Scratch space for archives and extractions; removed by the caller.
        var workDirectory: String
        /// This binary, re-executed as `_pack` for our own pack.
        var selfExecutable: String
        /// The `amk` CLI, for our listing and extraction; nil when not found.
        var amkCLI: String?
    }

    /// Tool labels that the report's comparisons refer to.
    enum Label {
        static let amk = "amk"
        static let amkSingle = "amk, 1 worker"
        static func amkPresetNice(_ niceLength: Int) -> String { "amk, nice \(niceLength) (xz's search)" }
        static let xzSingle = "tar | xz -T1"
        static func xzParallel(_ threads: Int) -> String { "tar | xz -T\(threads)" }
        static let pixz = "tar -I pixz"
        static let amkExtract = "amk extract"
        static let amkExtractPipe = "amk extract - (amk archive, through a pipe)"
        static func amkExtractForeign(_ threads: Int) -> String { "amk extract (xz -T\(threads) archive)" }
        static let amkExtractPixz = "amk extract (pixz archive)"
        static func xzExtract(_ threads: Int, archive: String) -> String { "xz -dc -T\(threads) | tar -x (\(archive) archive)" }
        static let pixzExtract = "pixz -d | tar -x (pixz archive)"
        static let amkList = "amk list"
    }

    let config: Configuration
    let stats: CorpusStats
    private(set) var records: [RunRecord] = []
    private(set) var notes: [String] = []
    /// Every tool of every phase in the order measured, with why it could not run if so.
    private(set) var lineup: [(phase: RunRecord.Phase, tool: String, unavailable: String?)] = []
    /// GNU tar's stream length for the corpus: the one input size behind every tool's MiB/s and
    /// ratio, so that a tool whose tar stream is longer (ours writes pax headers) is not credited
    /// for compressing or moving bytes the others did not need.
    private(set) var gnuTarBytes = 0
    /// Our tar stream's length, from the pack's summary.
    private(set) var amkTarBytes: Int?
    private(set) var amkStoredBlocks: Int?
    private(set) var amkBlocks: Int?
    /// Tools whose run failed: they sit out the rest of the session.
    private var failed: [String: String] = [:]
    private let log: (String) -> Void

    private var parent: String { (config.corpusPath as NSString).deletingLastPathComponent }
    private var name: String { (config.corpusPath as NSString).lastPathComponent }
    private var work: String { config.workDirectory }
    private func path(_ file: String) -> String { "\(work)/\(file)" }

    init(config: Configuration, stats: CorpusStats, log: @escaping (String) -> Void) {
        self.config = config
        self.stats = stats
        self.log = log
    }

    func run() throws {
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        notes.append(ChildProcess.rssMethod)
        try measureTarLength()
        measure(.pack, packTools(), rounds: config.runs)
        let cli = probeCLI()
        measure(.extract, extractTools(cli: cli), rounds: config.runs)
        let members = stats.sampleMembers(config.members)
        measure(.extractOne, memberTools(cli: cli), rounds: config.runs, members: members)
        measure(.list, listTools(cli: cli), rounds: max(3, config.runs))
    }

    /// GNU tar's output length, which doubles as a warm-up: every later run reads the corpus from
    /// the page cache, as every tool then sees the same (warm) input.
    private func measureTarLength() throws {
        let out = path("tar-length.txt")
        // Piped to wc: GNU tar skips reading file contents when its output is /dev/null.
        let command = "tar -C \(Shell.quote(parent)) -cf - \(Shell.quote(name)) | wc -c"
        let usage = try ChildProcess.run(command, stdout: out)
        guard usage.exitStatus == 0,
              let text = try? String(contentsOfFile: out, encoding: .utf8),
              let bytes = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw BenchError("tar could not read \(config.corpusPath)")
        }
        gnuTarBytes = bytes
        log(String(format: "tar stream: %.1f MiB (GNU tar, warm-up pass in %.1f s)", Double(bytes) / 1_048_576,
                   usage.wallSeconds))
    }

    // MARK: - The contenders

    private func packTools() -> [Tool] {
        let tarInput = "tar -C \(Shell.quote(parent)) -cf - \(Shell.quote(name))"
        let preset = config.preset
        let cores = config.workers
        let presetNice = (try? BlockEncoder(preset: preset, maxChunkSize: 1 << 20).niceLength) ?? 0
        func ours(_ label: String, workers: Int, file: String, niceLength: Int? = nil) -> Tool {
            let archive = path("\(file).tar.xz")
            let summary = path("\(file).json")
            return Tool(
                name: label,
                command: { _ in
                    "\(Shell.quote(self.config.selfExecutable)) _pack --source \(Shell.quote(self.config.corpusPath))"
                        + " --archive-path \(Shell.quote(self.name)) --output \(Shell.quote(archive))"
                        + " --preset \(preset) --workers \(workers)"
                        + (niceLength.map { " --nice-length \($0)" } ?? "") + " > \(Shell.quote(summary))"
                },
                inputBytes: { self.gnuTarBytes },
                prepare: { try? FileManager.default.removeItem(atPath: archive) },
                check: { _ in
                    let data = try Data(contentsOf: URL(fileURLWithPath: summary))
                    let result = try JSONDecoder().decode(PackResult.self, from: data)
                    if workers == cores {
                        self.amkTarBytes = Int(result.tarBytes)
                        self.amkBlocks = result.blocks
                        self.amkStoredBlocks = result.storedBlocks
                    }
                    return try Benchmark.size(of: archive)
                })
        }
        func peer(_ label: String, file: String, needs tool: String, _ command: String) -> Tool {
            let archive = path(file)
            return Tool(
                name: label,
                command: { _ in command.replacingOccurrences(of: "@OUT@", with: Shell.quote(archive)) },
                inputBytes: { self.gnuTarBytes },
                prepare: { try? FileManager.default.removeItem(atPath: archive) },
                check: { _ in try Benchmark.size(of: archive) },
                unavailable: Benchmark.which(tool) == nil ? "\(tool) is not installed" : nil)
        }
        // One worker measures the single-thread rate behind the efficiency figure; when the tar
        // stream fits in one block there is nothing to share, both runs would do the same work.
        let single: String? = cores == 1 ? "skipped: with --workers 1 the run above is the one-worker run"
            : gnuTarBytes <= PackOptions().chunkSize
                ? "skipped: the tar stream fits in one block, so one worker would repeat the run above" : nil
        return [
            ours(Label.amk, workers: cores, file: "amk"),
            ours(Label.amkSingle, workers: 1, file: "amk-1")
                .markedUnavailable(single),
            // The same pack with liblzma's own nice length for the preset, where amk's default
            // differs: the LZMA work of `xz -6`, so the row shows what the shorter search buys.
            ours(Label.amkPresetNice(presetNice), workers: cores, file: "amk-nice", niceLength: presetNice)
                .markedUnavailable(PackOptions.defaultNiceLength(preset: preset, extreme: false) == nil
                    ? "skipped: at preset \(preset) amk uses liblzma's nice length already" : nil),
            peer(Label.xzSingle, file: "xz-1.tar.xz", needs: "xz", "\(tarInput) | xz -\(preset) -T1 > @OUT@"),
            peer(Label.xzParallel(cores), file: "xz-2.tar.xz", needs: "xz",
                 "\(tarInput) | xz -\(preset) -T\(cores) > @OUT@"),
            // GNU tar splits -I's argument into words, so the level and threads go along with it.
            peer(Label.pixz, file: "pixz.tpxz", needs: "pixz",
                 "tar -C \(Shell.quote(parent)) -I 'pixz -\(preset) -p \(cores)' -cf @OUT@ \(Shell.quote(name))"),
        ]
    }

    /// The `amk` CLI when it can list our archive; otherwise nil, with a note saying why.
    private func probeCLI() -> String? {
        let pending = "our listing and extraction need a release `amk`: build it at the root with"
            + " `swift build -c release --product amk`, or pass --amk"
        guard let cli = config.amkCLI else {
            notes.append("amk CLI not found: \(pending).")
            return nil
        }
        guard FileManager.default.fileExists(atPath: path("amk.tar.xz")) else { return nil }
        let usage = try? ChildProcess.run("\(Shell.quote(cli)) list \(Shell.quote(path("amk.tar.xz")))",
                                          stdout: path("probe.txt"), stderr: path("probe.err"))
        if usage?.exitStatus == 0 { return cli }
        notes.append("\(cli) cannot `list` yet (\(Benchmark.firstLine(of: path("probe.err")))): \(pending).")
        return nil
    }

    private func extractTools(cli: String?) -> [Tool] {
        let destination = path("x")
        let expected = stats.files.count
        func tool(_ label: String, archive: String, needs: String?,
                  _ command: @escaping (String, String) -> String) -> Tool {
            Tool(
                name: label,
                command: { _ in command(Shell.quote(self.path(archive)), Shell.quote(destination)) },
                inputBytes: { self.gnuTarBytes },
                prepare: {
                    try? FileManager.default.removeItem(atPath: destination)
                    try FileManager.default.createDirectory(atPath: destination, withIntermediateDirectories: true)
                },
                check: { _ in
                    defer { try? FileManager.default.removeItem(atPath: destination) }
                    let found = try CorpusStats(root: "\(destination)/\(self.name)", prefix: self.name).files.count
                    guard found == expected else { throw BenchError("extracted \(found) files, expected \(expected)") }
                    return nil
                },
                unavailable: self.missing(archive: archive, tool: needs))
        }
        let cores = config.workers
        return [
            tool(Label.amkExtract, archive: "amk.tar.xz", needs: nil) {
                "\(Shell.quote(cli ?? "amk")) extract \($0) -C \($1)"
            }.markedUnavailable(cli == nil ? "n/a: needs the reader (see notes)" : nil),
            // The stream reader: nothing seeks, the blocks decode in parallel as they arrive.
            tool(Label.amkExtractPipe, archive: "amk.tar.xz", needs: nil) {
                "cat \($0) | \(Shell.quote(cli ?? "amk")) extract - -C \($1)"
            }.markedUnavailable(cli == nil ? "n/a: needs the reader (see notes)" : nil),
            tool(Label.xzExtract(cores, archive: "amk"), archive: "amk.tar.xz", needs: "xz") {
                "xz -dc -T\(cores) \($0) | tar -x -C \($1)"
            },
            // Foreign archives: no amk index, their blocks found through the xz Index.
            tool(Label.amkExtractForeign(cores), archive: "xz-2.tar.xz", needs: "xz") {
                "\(Shell.quote(cli ?? "amk")) extract \($0) -C \($1)"
            }.markedUnavailable(cli == nil ? "n/a: needs the reader (see notes)" : nil),
            tool(Label.xzExtract(cores, archive: "xz -T\(cores)"), archive: "xz-2.tar.xz", needs: "xz") {
                "xz -dc -T\(cores) \($0) | tar -x -C \($1)"
            },
            tool(Label.amkExtractPixz, archive: "pixz.tpxz", needs: "pixz") {
                "\(Shell.quote(cli ?? "amk")) extract \($0) -C \($1)"
            }.markedUnavailable(cli == nil ? "n/a: needs the reader (see notes)" : nil),
            tool(Label.pixzExtract, archive: "pixz.tpxz", needs: "pixz") {
                "pixz -d < \($0) | tar -x -C \($1)"
            },
        ]
    }

    private func memberTools(cli: String?) -> [Tool] {
        let destination = path("m")
        func tool(_ label: String, archive: String, needs: String?,
                  _ command: @escaping (String, String, String) -> String) -> Tool {
            Tool(
                name: label,
                command: { member in
                    command(Shell.quote(self.path(archive)), Shell.quote(member ?? ""), Shell.quote(destination))
                },
                prepare: {
                    try? FileManager.default.removeItem(atPath: destination)
                    try FileManager.default.createDirectory(atPath: destination, withIntermediateDirectories: true)
                },
                check: { member in
                    defer { try? FileManager.default.removeItem(atPath: destination) }
                    guard let member, let expected = self.stats.files[member] else { return nil }
                    let size = try Benchmark.size(of: "\(destination)/\(member)")
                    guard size == expected else { throw BenchError("\(member): \(size) bytes, expected \(expected)") }
                    return nil
                },
                unavailable: self.missing(archive: archive, tool: needs))
        }
        return [
            tool(Label.amkExtract, archive: "amk.tar.xz", needs: nil) {
                "\(Shell.quote(cli ?? "amk")) extract \($0) \($1) -C \($2)"
            }.markedUnavailable(cli == nil ? "n/a: needs the reader (see notes)" : nil),
            tool("pixz -x | tar -x (amk archive)", archive: "amk.tar.xz", needs: "pixz") {
                "pixz -x \($1) < \($0) | tar -x -C \($2)"
            },
            tool("pixz -x | tar -x (pixz archive)", archive: "pixz.tpxz", needs: "pixz") {
                "pixz -x \($1) < \($0) | tar -x -C \($2)"
            },
        ]
    }

    private func listTools(cli: String?) -> [Tool] {
        let out = path("list.txt")
        let expected = stats.files.count
        func tool(_ label: String, archive: String, needs: String?, minimumLines: Int,
                  _ command: @escaping (String) -> String) -> Tool {
            Tool(
                name: label,
                command: { _ in command(Shell.quote(self.path(archive))) + " > \(Shell.quote(out))" },
                check: { _ in
                    let text = try String(contentsOfFile: out, encoding: .utf8)
                    let lines = text.split(separator: "\n").count
                    guard lines >= minimumLines else {
                        throw BenchError("listed \(lines) names, expected \(minimumLines) or more")
                    }
                    return nil
                },
                unavailable: self.missing(archive: archive, tool: needs))
        }
        let cores = config.workers
        return [
            tool(Label.amkList, archive: "amk.tar.xz", needs: nil, minimumLines: 1) {
                "\(Shell.quote(cli ?? "amk")) list \($0)"
            }.markedUnavailable(cli == nil ? "n/a: needs the reader (see notes)" : nil),
            tool("pixz -l (amk archive)", archive: "amk.tar.xz", needs: "pixz", minimumLines: expected) {
                "pixz -l \($0)"
            },
            tool("pixz -l (pixz archive)", archive: "pixz.tpxz", needs: "pixz", minimumLines: expected) {
                "pixz -l \($0)"
            },
            // What listing costs without an index: decompress everything.
            tool("xz -dc | tar -t (xz -T\(cores) archive)", archive: "xz-2.tar.xz", needs: "xz",
                 minimumLines: expected) {
                "xz -dc -T\(cores) \($0) | tar -t"
            },
        ]
    }

    /// Why a tool that reads `archive` with `tool` cannot run, or nil.
    private func missing(archive: String, tool: String?) -> String? {
        if let tool, Benchmark.which(tool) == nil { return "\(tool) is not installed" }
        if !FileManager.default.fileExists(atPath: path(archive)) {
            return "no \(archive): its pack failed or did not run"
        }
        return nil
    }

    // MARK: - Measuring

    /// Runs every available tool once per round (and per member), rotating the order each time.
    private func measure(_ phase: RunRecord.Phase, _ tools: [Tool], rounds: Int, members: [String?] = [nil]) {
        lineup += tools.map { (phase, $0.name, $0.unavailable) }
        let available = tools.filter { $0.unavailable == nil }
        guard !available.isEmpty else { return }
        let errors = path("stderr.txt")
        var turn = 0
        for round in 1...rounds {
            for member in members {
                let shift = turn % available.count
                turn += 1
                for tool in available[shift...] + available[..<shift] {
                    let key = "\(phase.rawValue)/\(tool.name)"
                    guard failed[key] == nil else { continue }
                    var failure: String?
                    var outputBytes: Int?
                    var usage = ProcessUsage(wallSeconds: .nan, userSeconds: .nan, systemSeconds: .nan,
                                             peakRSSBytes: 0, exitStatus: -1)
                    do {
                        try tool.prepare()
                        usage = try ChildProcess.run(tool.command(member), stderr: errors)
                        if usage.exitStatus != 0 {
                            failure = "exit \(usage.exitStatus): \(Benchmark.firstLine(of: errors))"
                        } else {
                            outputBytes = try tool.check(member)
                        }
                    } catch {
                        failure = "\(error)"
                    }
                    records.append(RunRecord(phase: phase, tool: tool.name, round: round, member: member, usage: usage,
                                             inputBytes: tool.inputBytes(), outputBytes: outputBytes, failure: failure))
                    let what = "[\(phase.rawValue) \(round)/\(rounds)] \(tool.name)\(member.map { " \($0)" } ?? "")"
                    if let failure {
                        failed[key] = failure
                        notes.append("\(phase.rawValue) / \(tool.name) failed in round \(round): \(failure)")
                        log("\(what): FAILED \(failure)")
                    } else {
                        log(String(format: "%@: %.3f s wall, %.2f s CPU, %.0f MiB RSS", what, usage.wallSeconds,
                                   usage.cpuSeconds, Double(usage.peakRSSBytes) / 1_048_576))
                    }
                }
            }
        }
    }

    // MARK: - Helpers

    static func size(of path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.size] as? NSNumber)?.intValue ?? 0
    }

    static func firstLine(of path: String) -> String {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        let line = text.split(separator: "\n").first.map(String.init) ?? "no message"
        return String(line.prefix(200))
    }

    /// The program's path on `PATH`, or nil.
    static func which(_ program: String) -> String? {
        for folder in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let candidate = "\(folder)/\(program)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}
