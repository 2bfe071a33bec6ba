import IndexedArchive

/// `amk extract --json`.
struct ExtractReport: Encodable {
    var archive: String
    var directory: String
    /// Members written; null when the extraction failed as a whole (then ``error`` says why).
    @AlwaysPresent var entries: Int?
    /// Content bytes written; null on failure.
    @AlwaysPresent var bytes: UInt64?
    @AlwaysPresent var seconds: Double?
    /// The first ``ExtractSummary/keptWarnings`` warnings.
    var warnings: [Warning]
    /// How many warnings there were.
    var warningCount: Int
    /// Members not extracted, and why (the first ``ExtractSummary/keptFailures``).
    var failures: [Failure]
    /// How many members were not extracted.
    var failedMembers: Int
    /// The member names given that selected nothing.
    var notFound: [String]
    /// What ended the extraction, as the error line on standard error gives it; null when it
    /// ran to the end (members may still have failed: ``failures``).
    @AlwaysPresent var error: String?

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
        warningCount = summary.warningCount
        failures = summary.failures.map { Failure(member: $0.member, message: $0.message) }
        failedMembers = summary.failedMembers
        self.notFound = notFound
    }

    /// The report of an extraction that `error` ended, after the member failures `failures`
    /// (`count` in all): no summary came back, and a script asked for JSON (it printed nothing).
    /// `notFound`: the names given, when it ended because none of them selected anything.
    init(
        failedWith error: any Error, archive: String, directory: String, failures: [ArchiveError], count: Int,
        notFound: [String] = []
    ) {
        self.archive = archive
        self.directory = directory
        warnings = []
        warningCount = 0
        self.failures = failures.map { Failure(member: $0.member, message: $0.message) }
        failedMembers = count
        self.notFound = notFound
        self.error = (error as? ArchiveError)?.description ?? "\(error)"
    }
}
