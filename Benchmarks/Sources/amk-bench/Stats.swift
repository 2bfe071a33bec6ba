import Foundation

/// The median and range of a set of measurements: what the tables print.
///
/// Medians, not means: on a shared, noisy machine one run that lost its core to a neighbour
/// should not move the figure; the range shows how noisy the runs were.
struct Stats: Codable, Sendable {
    var median: Double
    var min: Double
    var max: Double
    var count: Int

    init?(_ values: [Double]) {
        let sorted = values.filter { $0.isFinite }.sorted()
        guard !sorted.isEmpty else { return nil }
        let middle = sorted.count / 2
        median = sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
        min = sorted[0]
        max = sorted[sorted.count - 1]
        count = sorted.count
    }

    /// `1.23 [1.20–1.31]`, or just `1.23` when every value was the same (one run).
    func formatted(_ format: String = "%.2f", suffix: String = "") -> String {
        let median = String(format: format, self.median) + suffix
        let low = String(format: format, min)
        let high = String(format: format, max)
        return low == high ? median : "\(median) [\(low)–\(high)]"
    }

    /// The same statistics with every value multiplied by `factor` (a change of unit).
    static func scaled(_ stats: Stats, by factor: Double) -> Stats {
        var copy = stats
        copy.median *= factor
        copy.min *= factor
        copy.max *= factor
        return copy
    }
}
