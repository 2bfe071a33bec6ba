import IndexedArchive

/// `amk extract --json`.
struct ExtractReport: Encodable {
    var archive: String
    var directory: String
    /// Members written.
    var entries: Int
    /// Content bytes written.
    var bytes: UInt64
    var seconds: Double
    var warnings: [Warning]
    /// Members not extracted, and why (the first ``ExtractSummary/keptFailures``).
    var failures: [Failure]
    /// How many members were not extracted.
    var failedMembers: Int
    /// The member names given that selected nothing.
    var notFound: [String]

    struct Warning: Encodable {
        var member: String
        /// `unsupportedType`, `setIDBitsDropped`, `missingLinkTarget` or
        /// `extendedAttributesNotRestored`.
        var kind: String
        var message: String
    }

    struct Failure: Encodable {
        var member: String?
        var message: String
    }

    init(_ summary: ExtractSummary, archive: String, directory: String, notFound: [String] = []) {
        self.archive = archive
        self.directory = directory
        entries = summary.entries
        bytes = summary.bytes
        seconds = summary.seconds
        warnings = summary.warnings.map { Warning(member: $0.member, kind: $0.kind.rawValue, message: $0.message) }
        failures = summary.failures.map { Failure(member: $0.member, message: $0.message) }
        failedMembers = summary.failedMembers
        self.notFound = notFound
    }
}
