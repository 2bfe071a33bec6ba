import ArgumentParser
import Foundation
import IndexedArchive
import Synchronization
import Tar
import XZ

/// `amk extract A [MEMBER...] [-C DIR]`: writes members under a directory, and nowhere else
/// (with `-O`, only the files' content, to standard output).
///
/// The engine refuses absolute paths, `..` and writing through symbolic links, and removes a file
/// it was writing when extraction fails or is interrupted; files finished before that stay.
/// The `-C` folder is created with its parents once the archive has opened, and removed again
/// if the extraction fails before anything is written into it (``DestinationDirectory``).
/// `-` reads the archive from standard input, in one pass (``ArchiveInput``).
struct ExtractCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "extract",
        abstract: "Extract an archive, or some of its members.",
        discussion: """
            A directory given as MEMBER selects everything under it. Existing files are replaced \
            (--overwrite, the default, as in tar); --keep-old-files leaves them and reports each. \
            A member that cannot be written (an unsafe name, a file kept, a hard link to nothing) \
            is named and passed over, as in tar, and the exit status is then 1.

            Examples:
              amk extract app.tar.xz -C ~/restore
              amk extract app.tar.xz app/Documents -C ~/restore
              amk extract app.tar.xz --strip-components 1 -C ~/app
              tar -cJf - app | amk extract - -C copy
              amk extract -O app.tar.xz app/Documents/notes.txt | less
            """
    )

    @Argument(help: ArgumentHelp("The archive to extract; - reads standard input.", valueName: "archive"), completion: .file())
    var archive: String

    @Argument(
        help: ArgumentHelp(
            "Members to extract, as `amk list` prints them, escapes such as \\n and \\\\ included (default: all).",
            valueName: "member"))
    var members: [String] = []

    @OptionGroup var memberFile: MemberFileOption

    @Option(
        name: [.customShort("C"), .customLong("directory")],
        help: ArgumentHelp(
            "Extract under this directory (created with its parents if missing; default: the current directory).",
            valueName: "dir"),
        completion: .directory)
    var directory: String = "."

    @Option(
        help: ArgumentHelp(
            "Remove this many leading components from each member's name (members left with no name are skipped).",
            valueName: "n"))
    var stripComponents: Int = 0

    @Flag(help: "Leave a file that is already there, and report it (exit status 1), rather than replace it.")
    var keepOldFiles = false

    @Flag(help: "Replace files that are already there (the default).")
    var overwrite = false

    @OptionGroup var attributes: AttributeOptions

    @OptionGroup var ownership: OwnershipOptions

    @OptionGroup var limit: ContentLimitOption

    @Flag(
        name: [.customShort("O"), .long],
        help: "Write the content of the selected files to standard output, one after another, and create nothing (tar -xO).")
    var toStdout = false

    @Flag(
        name: [.short, .long],
        help:
            "List each member as it is written (on standard error with -O or --json), with the engine's notices; its debug log is AMK_LOG=debug."
    )
    var verbose = false

    @Flag(name: [.short, .long], help: "Print no summary (warnings and errors still go to standard error).")
    var quiet = false

    @Flag(help: "Print the summary as a JSON object (see README, \"JSON output\").")
    var json = false

    @Flag(
        inversion: .prefixedNo,
        help: "Show a progress bar on standard error (default: only when it is a terminal and -v is not given).")
    var progress: Bool?

    func validate() throws {
        if keepOldFiles && overwrite {
            throw ValidationError("--keep-old-files and --overwrite cannot be used together.")
        }
        if stripComponents < 0 {
            throw ValidationError("--strip-components must be 0 or more, not \(stripComponents).")
        }
        if quiet && (json || verbose) {
            throw ValidationError("--quiet cannot be used with --json or --verbose.")
        }
        if toStdout && json {
            throw ValidationError("--to-stdout writes the content to standard output: --json cannot share it.")
        }
        try memberFile.validate(archive: archive)
    }

    func run() async throws {
        // `amk list` escapes names (a newline prints as \n, a backslash as \\): undo that, so
        // that every member can be named by copying its line.
        let members = try await memberFile.names(adding: members).map(TerminalSafe.parseName)
        let directory = directory
        let argument = archive
        var options = ExtractOptions()
        options.stripComponents = stripComponents
        options.existingFiles = keepOldFiles ? .keep : .replace
        // As GNU tar and bsdtar: a member that cannot be written is reported and passed over,
        // and the status says so at the end.
        options.continuesAfterMemberFailures = true
        attributes.apply(to: &options)
        limit.apply(to: &options)
        ownership.apply(to: &options)
        options.logger = Diagnostics.tarLogger("amk.extract", verbose: verbose)
        if toStdout { options.contentOutput = STDOUT_FILENO }
        if verbose {
            // As tar does, the names go to standard error when the content takes standard output;
            // so too when the JSON document does, which must be all that standard output holds.
            let names = toStdout || json ? STDERR_FILENO : STDOUT_FILENO
            options.onMember = { StandardError.write(TerminalSafe.name($0) + "\n", to: names) }
        }
        // The names that select nothing are named at the end (the summary's unmatchedMembers), as
        // GNU tar names them ("Not found in archive"), whatever else was extracted.
        if !members.isEmpty { options.selection = MemberSelection(members) }
        // The members that failed, as they fail: when damage or a limit then ends the
        // extraction, no summary comes back, and they went unnamed behind it.
        let failed = Mutex<(kept: [ArchiveError], count: Int)>(([], 0))
        options.onFailure = { error in
            failed.withLock {
                if $0.kept.count < ExtractSummary.keptFailures { $0.kept.append(error) }
                $0.count += 1
            }
        }
        let showProgress = progress ?? (StandardError.isTerminal && !verbose)
        let summary: ExtractSummary
        do {
            summary = try await Self.extract(argument, members: members, directory: directory, options: options, showProgress: showProgress)
        } catch {
            let (kept, count) = failed.withLock { $0 }
            if json && !toStdout && !(error is CancellationError) {
                // A script asked for JSON: it gets the failure as JSON too, as from verify and
                // salvage (it got nothing), and the usual lines on standard error and status.
                // No name selected anything: each is one that selected nothing.
                let unmatched =
                    (error as? ArchiveError)?.code == .memberNotFound ? MemberSelection(members).unmatched(in: [], order: members) : []
                try JSONOutput.print(
                    ExtractReport(
                        failedWith: error, archive: argument, directory: directory, failures: kept, count: count,
                        notFound: unmatched))
            }
            Self.printFailures(kept, count: count)
            if let error = error as? ArchiveError, toStdout && error.code == .io(errno: EPIPE) {
                // The reader of the content went away (`| head`): as for cat and tar, that is the end,
                // and not worth a message; the content was not all delivered, hence the status.
                throw ExitCode(1)
            }
            if let error = error as? ArchiveError, Self.salvageMayRecover(error) {
                // What went wrong comes first, as for any failure; then what to do about it, since
                // a damaged index stops the whole extraction while every member may still be sound.
                StandardError.line("amk: \(error.description)")
                StandardError.line("amk: \(argument == "-" ? Self.streamSalvageHint : Self.salvageHint)")
                throw ExitCode(1)
            }
            throw error
        }
        let notFound = summary.unmatchedMembers
        for warning in summary.warnings {
            // The engine's warnings quote member names raw.
            StandardError.line("amk: warning: \(warning)")
        }
        if summary.warningCount > summary.warnings.count {
            StandardError.line("amk: warning: ... and \(summary.warningCount - summary.warnings.count) more warnings")
        }
        Self.printFailures(summary.failures, count: summary.failedMembers)
        if toStdout {
            // Standard output holds the content: no summary, as tar prints none.
        } else if json {
            try JSONOutput.print(ExtractReport(summary, archive: argument, directory: directory, notFound: notFound))
        } else if !quiet {
            print(
                "extracted \(summary.entries) \(summary.entries == 1 ? "entry" : "entries"), "
                    + "\(ByteSize.format(summary.bytes)) in \(ByteSize.formatSeconds(summary.seconds))")
        }
        if summary.failedMembers > 0 || !notFound.isEmpty {
            // The summary first, whatever standard output is: the last lines say how it ended.
            if let failure = StandardOutput.flushFailure() { throw failure }
            for member in notFound {
                StandardError.line("amk: \(ArchiveError(.memberNotFound, "no such member", path: argument, member: member).description)")
            }
            if summary.failedMembers > 0 {
                let count = summary.failedMembers
                StandardError.line("amk: \(count) \(count == 1 ? "member was" : "members were") not extracted (see above)")
            }
            throw ExitCode(AMK.failureStatus)
        }
    }

    /// Names each failed member kept, and how many more there were.
    static func printFailures(_ failures: [ArchiveError], count: Int) {
        for failure in failures {
            StandardError.line("amk: \(failure.description)")
        }
        if count > failures.count {
            StandardError.line("amk: ... and \(count - failures.count) more members that failed")
        }
    }

    /// What to try after damage stopped an extraction from a pipe: salvage reads a file.
    static let streamSalvageHint =
        "the archive is damaged: save it to a file, then 'amk salvage FILE -C DIR' writes every member that lies in sound "
        + "blocks and names those lost"

    /// What to try after damage stopped an extraction.
    static let salvageHint =
        "the archive is damaged: 'amk salvage ARCHIVE -C DIR' writes every member that lies in sound blocks and names those lost"

    /// Whether `error` is damage that `amk salvage` reads past: a bad block, index, header or
    /// checksum. A refusal (an unsafe path, a limit, a missing member) is not damage, and
    /// salvage would refuse it the same way.
    ///
    /// A file refused at its first byte (not xz at all: gzip, zip, a plain tar, an empty file,
    /// or a stream header that is not one) is no archive salvage can read: it recovers nothing
    /// from it, and the advice sent users there.
    static func salvageMayRecover(_ error: ArchiveError) -> Bool {
        guard error.code == .corrupt || error.code == .checksumMismatch else { return false }
        return error.offset != 0 && (error.underlying as? XZError)?.offset != 0
    }

    /// Extracts from `argument` (a path, or - for standard input) with `options`.
    private static func extract(
        _ argument: String, members: [String], directory: String, options: ExtractOptions, showProgress: Bool
    ) async throws -> ExtractSummary {
        try await SignalCancellation.run { [options] in
            switch try await ArchiveInput.resolve(argument) {
            case .file(let path):
                return try await Self.extractFile(
                    path, members: members, directory: directory, options: options,
                    showProgress: showProgress)
            case .stream(let fd, let name):
                let destination = options.contentOutput == nil ? try DestinationDirectory(creating: directory) : nil
                // A stream's size is unknown until its end: the bar shows bytes and rate.
                var options = options
                let bar = showProgress ? ProgressBar(label: "extracting", total: 0) : nil
                if let bar { options.onProgress = { bar.update(completed: $0) } }
                defer { bar?.finish() }
                do {
                    let result = try await ArchiveStreamReader.extract(from: fd, to: directory, options: options)
                    if !members.isEmpty && result.extracted == 0 && result.failedMembers == 0 && options.stripComponents == 0 {
                        throw Self.noMatch(members, path: name)
                    }
                    // Every member refused: the folders made for them go, as after any failure.
                    if result.extracted == 0 && result.failedMembers > 0 { destination?.removeIfEmpty() }
                    var summary = ExtractSummary(
                        entries: result.extracted, bytes: result.bytes, warnings: result.warnings, seconds: result.seconds,
                        failures: result.failures, failedMembers: result.failedMembers, warningCount: result.warningCount)
                    summary.unmatchedMembers = result.unmatchedMembers
                    return summary
                } catch {
                    destination?.removeIfEmpty()
                    throw error
                }
            }
        }
    }

    static func extractFile(
        _ path: String, members: [String], directory: String, options: ExtractOptions,
        showProgress: Bool
    ) async throws -> ExtractSummary {
        // A few members: the index's other entries are checked but never made.
        let reader =
            if let filter = options.memberFilter {
                try await ArchiveReader.open(path: path, selecting: filter)
            } else {
                try await ArchiveReader.open(path: path)
            }
        Diagnostics.noteIndexSkipped(reader.indexSkipped, path: path)
        var options = options
        var bar: ProgressBar?
        if showProgress {
            // The index gives the total for free; without one it would cost a pass.
            let total = reader.mode == .indexed ? Self.contentBytes(try await reader.entries(), selectedBy: members) : 0
            let shown = ProgressBar(label: "extracting", total: total)
            options.onProgress = { shown.update(completed: $0) }
            bar = shown
        }
        defer { bar?.finish() }
        // With an index, names that match nothing at all are caught before anything is written;
        // without one that would cost a full pass, so it is caught after (nothing extracted). When
        // some match, those are extracted and the others named at the end, as GNU tar does.
        if !members.isEmpty, reader.mode == .indexed {
            // One set of the names, not a search of every member for each name given (20,000 of
            // each took seconds). A reader opened for the selection holds every member with one
            // of the names, since each selects itself.
            let names = Set(try await reader.entries().map { ExactName($0.name) })
            if !members.contains(where: { MemberFilter.wasMatched($0, in: names) }), let first = members.first {
                throw ArchiveError(.memberNotFound, "no such member", path: path, member: first)
            }
        }
        // Only now that the archive has opened (and the members were found, with an index).
        let destination = options.contentOutput == nil ? try DestinationDirectory(creating: directory) : nil
        do {
            let summary = try await reader.extract(to: directory, options: options)
            if !members.isEmpty && summary.entries == 0 && summary.failedMembers == 0 && options.stripComponents == 0 {
                throw noMatch(members, path: path)
            }
            // Every member refused: the folders made for them go, as after any failure.
            if summary.entries == 0 && summary.failedMembers > 0 { destination?.removeIfEmpty() }
            return summary
        } catch {
            destination?.removeIfEmpty()
            throw error
        }
    }

    /// The content bytes of the regular members `members` selects (all when empty).
    static func contentBytes(_ entries: [ArchiveEntry], selectedBy members: [String]) -> UInt64 {
        let selection = members.isEmpty ? nil : MemberSelection(members)
        return entries.reduce(0) { total, entry in
            guard entry.kind == .regular, selection?.selects(entry.path) ?? true else { return total }
            return total + entry.size
        }
    }

    static func noMatch(_ members: [String], path: String) -> ArchiveError {
        ArchiveError(
            .memberNotFound, "no member matches \(members.map { "'\(TerminalSafe.name($0))'" }.joined(separator: ", "))",
            path: path)
    }
}
