import ArgumentParser
import IndexedArchive

/// `amk salvage A -C DIR`: recovers the members of a damaged or truncated archive that lie wholly
/// in blocks whose checks verify.
///
/// Exits 0 only when the archive was whole: every block verified and nothing was lost. Damage found
/// or a member lost exits 1 after the report is printed, so a script that salvages and moves on
/// cannot mistake a partial recovery for a complete one; a failure to salvage at all (unreadable
/// file, unwritable directory) exits 1 too, with the error on standard error.
struct SalvageCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "salvage",
        abstract: "Recover what can be trusted from a damaged or truncated archive.",
        discussion: """
            Writes every member that lies wholly in blocks whose checks verify, and reports the \
            damage and the members lost. Exits 0 when the archive was whole, 1 when damage was \
            found or any member was lost (or the salvage could not run).

            Examples:
              amk salvage damaged.tar.xz -C recovered
              amk salvage --json damaged.tar.xz -C recovered | jq .lost
            """
    )

    /// Lost members listed by name; beyond this only a count, so a badly damaged archive does not
    /// bury the summary.
    static let lostNamesShown = 20

    @Argument(help: ArgumentHelp("The damaged archive.", valueName: "archive"), completion: .file())
    var archive: String

    @Option(
        name: [.customShort("C"), .customLong("directory")],
        help: ArgumentHelp("Write recovered members under this directory (created if missing).", valueName: "dir"),
        completion: .directory)
    var directory: String

    @Flag(help: "Print the report as a JSON object (see README, \"JSON output\").")
    var json = false

    @OptionGroup var attributes: AttributeOptions

    @OptionGroup var ownership: OwnershipOptions

    @OptionGroup var limit: ContentLimitOption

    @Flag(inversion: .prefixedNo, help: "Show a progress bar on standard error (default: only when it is a terminal).")
    var progress: Bool?

    func validate() throws {
        // `-` is standard input for list, extract, verify and info; salvage seeks to each block
        // header in turn, which a pipe cannot do. It said "open failed: No such file or directory".
        guard archive != "-" else {
            throw ValidationError(
                "salvage reads a file, not standard input (-): it jumps from block to block, which a pipe cannot do; save the stream to a file first."
            )
        }
    }

    func run() async throws {
        let path = archive
        let directory = directory
        // What a damaged archive holds is unknown before it is read: bytes and rate, no total.
        let bar = progress ?? StandardError.isTerminal ? ProgressBar(label: "salvaging", total: 0) : nil
        var options = ExtractOptions()
        attributes.apply(to: &options)
        ownership.apply(to: &options)
        limit.apply(to: &options)
        if let bar { options.onProgress = { bar.update(completed: $0) } }
        let report = try await SignalCancellation.run { [options] in
            defer { bar?.finish() }
            return try await ArchiveSalvager.salvage(path: path, to: directory, options: options)
        }
        // "No damage found" of a stream without a check would claim what nothing stood behind.
        if report.isUnchecked {
            StandardError.line(
                "amk: warning: \(TerminalSafe.name(path)): the xz stream carries no integrity check (check type None): "
                    + "damage to the members' content cannot be found")
        }
        // Without the index the salvager knows only the member the damage cut; the report must
        // not pretend that is all.
        if json {
            try JSONOutput.print(SalvageJSON(report, archive: path, directory: directory, whole: Self.isWhole(report)))
        } else {
            for line in Self.lines(for: report, lostListIsComplete: report.lostIsComplete) { print(line) }
        }
        if !Self.isWhole(report) { throw ExitCode(1) }
    }

    /// Whether the salvage found the archive whole: no damage and nothing lost.
    static func isWhole(_ report: SalvageReport) -> Bool {
        report.damageOffset == nil && report.stop == nil && report.lost.isEmpty
    }

    static func lines(for report: SalvageReport, lostListIsComplete: Bool) -> [String] {
        var lines: [String] = []
        let recovered = report.recovered.count
        lines.append(
            "recovered \(recovered) \(recovered == 1 ? "member" : "members") from \(report.goodBlocks) good \(report.goodBlocks == 1 ? "block" : "blocks")"
        )
        guard report.damageOffset != nil || report.stop != nil || !report.lost.isEmpty else {
            lines.append("no damage found")
            return lines
        }
        if report.damageOffset == nil, report.stop == nil {
            // Every block verified, yet members could not be made: hard links whose target the
            // archive does not hold before them.
            lines.append("no damage found in the blocks, but hard links without their target were not made")
        }
        if let offset = report.damageOffset {
            lines.append("damage at offset \(offset): \(TerminalSafe.message(report.damage ?? "unknown"))")
        }
        if let stop = report.stop { lines.append("stopped: \(TerminalSafe.message(stop))") }
        let lost = report.lost.count
        let noun = lost == 1 ? "member" : "members"
        if lostListIsComplete {
            lines.append("lost \(lost) \(noun)\(lost == 0 ? "" : ":")")
        } else if lost == 0 {
            // "Lost at least 0" read as nothing lost, where the members after the damage are
            // only unknown.
            lines.append("members after the damage are unknown: no readable index lists them, so what was lost cannot be told")
        } else {
            lines.append("lost at least \(lost) \(noun) (no readable index lists the members after the damage):")
        }
        for name in report.lost.prefix(lostNamesShown) { lines.append("  \(TerminalSafe.name(name))") }
        if lost > lostNamesShown { lines.append("  ... and \(lost - lostNamesShown) more") }
        return lines
    }
}
