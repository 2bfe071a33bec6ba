import Foundation
import TestSupport

/// How much stress to apply, from the environment.
///
/// - `AMK_STRESS_RUNS`: runs of the random schedule (default 40, a few minutes in CI; 1000 or more
///   for the long mode). The kill and latency tests scale from it.
/// - `AMK_STRESS_SEED`: the seed of run 0 (decimal or `0x` hex; default `0x5EED`). Run `i` uses seed
///   `base + i`, and everything a run does follows from its seed, so a failing run is replayed
///   with `AMK_STRESS_SEED=<its seed> AMK_STRESS_RUNS=1`.
enum StressSettings {
    static let defaultRuns = 40
    static let defaultSeed: UInt64 = 0x5EED

    static let runs: Int = {
        guard let text = ProcessInfo.processInfo.environment["AMK_STRESS_RUNS"], let value = Int(text), value > 0 else {
            return defaultRuns
        }
        return value
    }()

    static let baseSeed: UInt64 = {
        guard let text = ProcessInfo.processInfo.environment["AMK_STRESS_SEED"] else { return defaultSeed }
        return parseSeed(text) ?? defaultSeed
    }()

    static func parseSeed(_ text: String) -> UInt64? {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        if trimmed.hasPrefix("0x") { return UInt64(trimmed.dropFirst(2), radix: 16) }
        return UInt64(trimmed)
    }

    static func seed(forRun index: Int) -> UInt64 { baseSeed &+ UInt64(index) }

    /// How to replay one run, for failure messages.
    static func replay(_ seed: UInt64) -> String {
        "replay: AMK_STRESS_SEED=\(hex(seed)) AMK_STRESS_RUNS=1"
    }

    static func hex(_ seed: UInt64) -> String { "0x" + String(seed, radix: 16, uppercase: true) }
}

/// The draws the stress suites make from the shared seeded generator.
extension SeededGenerator {
    mutating func chance(_ probability: Double) -> Bool { Double.random(in: 0..<1, using: &self) < probability }

    mutating func milliseconds(_ range: ClosedRange<Int>) -> Duration { .milliseconds(Int.random(in: range, using: &self)) }
}

extension Duration {
    var seconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) / 1e18
    }

    var milliseconds: Double { seconds * 1000 }

    var formatted: String { String(format: "%.1f ms", milliseconds) }
}
