import ArgumentParser
import IndexedArchive

/// `amk salvage A -C DIR`: recovers the members of a damaged or truncated archive that lie wholly
/// in blocks whose checks verify.
///
/// Exits 0 when the salvage ran, whatever it recovered: the report says what was lost. Only a
/// failure to salvage at all (unreadable file, unwritable directory) exits 1.
struct SalvageCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "salvage",
        abstract: "Recover what can be trusted from a damaged or truncated archive."
    )

    /// Lost members listed by name; beyond this only a count, so a badly damaged archive does not
    /// bury the summary.
    static let lostNamesShown = 20

    @Argument(help: ArgumentHelp("The damaged archive.", valueName: "archive"), completion: .file())
    var archive: String

    @Option(name: [.customShort("C"), .customLong("directory")],
            help: ArgumentHelp("Write recovered members under this directory (created if missing).", valueName: "dir"),
            completion: .directory)
    var directory: String

    func run() async throws {
        let path = archive, directory = directory
        let report = try await SignalCancellation.run {
            try await ArchiveSalvager.salvage(path: path, to: directory)
        }
        // Without the index the salvager knows only the member the damage cut; the report must
        // not pretend that is all.
        for line in Self.lines(for: report, lostListIsComplete: report.lostIsComplete) { print(line) }
    }

    static func lines(for report: SalvageReport, lostListIsComplete: Bool) -> [String] {
        var lines: [String] = []
        let recovered = report.recovered.count
        lines.append("recovered \(recovered) \(recovered == 1 ? "member" : "members") from \(report.goodBlocks) good \(report.goodBlocks == 1 ? "block" : "blocks")")
        guard let offset = report.damageOffset else {
            lines.append("no damage found")
            return lines
        }
        lines.append("damage at offset \(offset): \(TerminalSafe.message(report.damage ?? "unknown"))")
        let lost = report.lost.count
        let noun = lost == 1 ? "member" : "members"
        if lostListIsComplete {
            lines.append("lost \(lost) \(noun)\(lost == 0 ? "" : ":")")
        } else {
            lines.append("lost at least \(lost) \(noun) (the index is unreadable, so later members are unknown)\(lost == 0 ? "" : ":")")
        }
        for name in report.lost.prefix(lostNamesShown) { lines.append("  \(TerminalSafe.name(name))") }
        if lost > lostNamesShown { lines.append("  ... and \(lost - lostNamesShown) more") }
        return lines
    }
}
