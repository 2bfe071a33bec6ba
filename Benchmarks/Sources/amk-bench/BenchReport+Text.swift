import Foundation

/// The report as the tables printed on stdout.
extension BenchReport {
    func text() -> String {
        let mib = 1_048_576.0
        var out: [String] = []
        let scale = settings.scale.map { ", scale \(CorpusCache.format($0))" } ?? ""
        out.append("amk-bench: corpus \(settings.corpus)\(scale) at \(corpus.path)")
        var tarLine = String(format: "  %d files, %d folders, %.1f MiB of content; tar stream %.1f MiB (GNU tar)",
                             corpus.files, corpus.directories, Double(corpus.contentBytes) / mib,
                             Double(corpus.gnuTarBytes) / mib)
        if let ours = corpus.amkTarBytes {
            tarLine += String(format: ", %.1f MiB (amk", Double(ours) / mib)
            if let blocks = corpus.amkBlocks, let stored = corpus.amkStoredBlocks {
                tarLine += ": \(blocks) block\(blocks == 1 ? "" : "s"), \(stored) stored uncompressed"
            }
            tarLine += ")"
        }
        out.append(tarLine)
        out.append("  \(host.cores) cores, preset \(settings.preset), amk workers \(settings.workers), "
                   + "\(settings.runs) round(s), tools alternated within each round; warm page cache")
        out.append("  figures: median [min–max] over rounds (a lone figure: one run); MiB = 2^20 bytes; peak RSS = "
                   + "largest process of the run")
        out.append("  MiB/s and ratio use the GNU tar stream's length for every tool: the same work, whatever "
                   + "each tool's own tar stream adds")
        out.append("")

        out.append(table("PACK", phase: .pack, columns: ["wall s", "CPU s", "MiB/s", "archive MiB", "ratio",
                                                          "peak RSS MiB"]) { s in
            [s.wallSeconds?.formatted(), s.cpuSeconds?.formatted(), s.mibPerSecond?.formatted("%.1f"),
             s.outputBytes.map { Stats.scaled($0, by: 1 / mib).formatted("%.2f") }, s.ratio?.formatted("%.3f"),
             s.peakRSSMiB?.formatted("%.0f")]
        })
        out += comparisonLines(.pack)
        out.append("")
        let extractColumns = ["wall s", "CPU s", "MiB/s", "peak RSS MiB"]
        out.append(table("FULL EXTRACTION", phase: .extract, columns: extractColumns) { s in
            [s.wallSeconds?.formatted(), s.cpuSeconds?.formatted(), s.mibPerSecond?.formatted("%.1f"),
             s.peakRSSMiB?.formatted("%.0f")]
        })
        out += comparisonLines(.extract)
        out.append("")
        out.append(table("ONE-MEMBER EXTRACTION (\(settings.members) members × \(settings.runs) rounds)",
                         phase: .extractOne, columns: ["latency s", "CPU s", "peak RSS MiB"]) { s in
            [s.wallSeconds?.formatted("%.3f"), s.cpuSeconds?.formatted("%.3f"), s.peakRSSMiB?.formatted("%.0f")]
        })
        out += comparisonLines(.extractOne)
        out.append("")
        let listColumns = ["wall s", "CPU s", "peak RSS MiB"]
        out.append(table("LISTING (\(corpus.files) files)", phase: .list, columns: listColumns) { s in
            [s.wallSeconds?.formatted("%.3f"), s.cpuSeconds?.formatted("%.3f"), s.peakRSSMiB?.formatted("%.0f")]
        })
        out += comparisonLines(.list)
        if !notes.isEmpty {
            out.append("")
            out.append("notes:")
            out += notes.map { "- \($0)" }
        }
        return out.joined(separator: "\n") + "\n"
    }

    private func table(_ title: String, phase: RunRecord.Phase, columns: [String],
                       cells: (ToolSummary) -> [String?]) -> String {
        var table = TextTable([title, "runs"] + columns)
        for summary in summaries where summary.phase == phase {
            if let reason = summary.unavailable {
                table.add(["\(summary.tool): \(reason)"])
            } else if summary.runs == 0 {
                table.add(["\(summary.tool): FAILED \(summary.failure ?? "")"])
            } else {
                let runs = summary.failures > 0 ? "\(summary.runs) (+\(summary.failures) failed)" : "\(summary.runs)"
                table.add([summary.tool, runs] + cells(summary).map { $0 ?? "–" })
            }
        }
        return table.render()
    }

    private func comparisonLines(_ phase: RunRecord.Phase) -> [String] {
        // A comparison with no pairs (ours or the peer did not run) is left out: its row says why.
        comparisons.filter { $0.phase == phase }.compactMap { comparison in
            comparison.stats.map { "  \(comparison.label): " + $0.formatted("%.2f", suffix: "×") }
        }
    }
}
