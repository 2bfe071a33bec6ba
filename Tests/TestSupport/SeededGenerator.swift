package import SampleData

/// The seeded generator every test target draws from: SampleData's SplitMix64, the generator
/// behind the demo's container and the benchmark's corpora, so the project has one. Small, fast,
/// the same on every platform, and random enough that LZMA cannot compress its output. A seed
/// means the same run anywhere, so a failing "random" test is replayed from the seed its message
/// gives. Suites name it by what they draw from, not by its algorithm.
package typealias SeededGenerator = SplitMix64
