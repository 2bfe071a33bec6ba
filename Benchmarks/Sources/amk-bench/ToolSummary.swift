/// One tool's figures in one phase: medians and ranges over its successful runs.
struct ToolSummary: Codable, Sendable {
    var phase: RunRecord.Phase
    var tool: String
    var runs: Int
    var failures: Int
    var wallSeconds: Stats?
    var cpuSeconds: Stats?
    /// Input tar MiB over wall seconds.
    var mibPerSecond: Stats?
    var outputBytes: Stats?
    /// Archive bytes over input tar bytes.
    var ratio: Stats?
    var peakRSSMiB: Stats?
    /// Why the tool did not run (not installed, not implemented yet).
    var unavailable: String?
    /// Why its last failed run failed.
    var failure: String?

    init(phase: RunRecord.Phase, tool: String, unavailable: String?, records: [RunRecord]) {
        self.phase = phase
        self.tool = tool
        self.unavailable = unavailable
        failure = records.last { $0.failure != nil }?.failure
        let good = records.filter { $0.failure == nil }
        runs = good.count
        failures = records.count - good.count
        wallSeconds = Stats(good.map(\.usage.wallSeconds))
        cpuSeconds = Stats(good.map(\.usage.cpuSeconds))
        mibPerSecond = Stats(good.compactMap { run in
            run.inputBytes.map { Double($0) / 1_048_576 / run.usage.wallSeconds }
        })
        outputBytes = Stats(good.compactMap { $0.outputBytes.map(Double.init) })
        ratio = Stats(good.compactMap { run in
            guard let output = run.outputBytes, let input = run.inputBytes, input > 0 else { return nil }
            return Double(output) / Double(input)
        })
        peakRSSMiB = Stats(good.map { Double($0.usage.peakRSSBytes) / 1_048_576 })
    }
}
