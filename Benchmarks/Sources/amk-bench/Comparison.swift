/// A ratio between two tools computed run by run within the same round (and member), then
/// summarised: both sides of each ratio shared the machine's mood of that moment.
struct Comparison: Codable, Sendable {
    var phase: RunRecord.Phase
    /// What the figure means, for the table.
    var label: String
    var stats: Stats?

    /// `value(numerator) / (factor * value(denominator))` for each round and member where both ran.
    init(_ label: String, phase: RunRecord.Phase, records: [RunRecord], numerator: String, denominator: String,
         factor: Double = 1, value: (RunRecord) -> Double?) {
        self.phase = phase
        self.label = label
        struct Key: Hashable {
            var round: Int
            var member: String?
        }
        let ok = records.filter { $0.phase == phase && $0.failure == nil }
        var bottoms: [Key: Double] = [:]
        for run in ok where run.tool == denominator {
            bottoms[Key(round: run.round, member: run.member)] = value(run)
        }
        var ratios: [Double] = []
        for run in ok where run.tool == numerator {
            if let top = value(run), let bottom = bottoms[Key(round: run.round, member: run.member)], bottom > 0 {
                ratios.append(top / (factor * bottom))
            }
        }
        stats = Stats(ratios)
    }
}
