/// One measured run of one tool: a row of the JSON report.
struct RunRecord: Codable, Sendable {
    /// What was measured.
    enum Phase: String, Codable, Sendable, CaseIterable {
        case pack
        case extract
        case extractOne = "extract-one"
        case list
    }

    var phase: Phase
    var tool: String
    /// Which round (1-based); within a round every tool runs once, in a rotated order.
    var round: Int
    /// The member extracted, for `extract-one`.
    var member: String?
    var usage: ProcessUsage
    /// The corpus's GNU tar stream length, the same for every tool (the MiB/s numerator and the
    /// ratio's denominator); nil for runs that are not throughput measures.
    var inputBytes: Int?
    /// Archive bytes written, for `pack`.
    var outputBytes: Int?
    /// Why the run does not count, if it failed (a non-zero exit, wrong output).
    var failure: String?
}
