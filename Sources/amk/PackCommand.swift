import ArgumentParser
import Foundation
import IndexedArchive
import Tar

/// `amk pack DIR... -o A.tar.xz`: packs directories into one indexed, pixz-compatible archive.
///
/// Nothing appears at the output path until the archive is complete: the engine writes to a
/// temporary file and renames it at the end, so an interrupted or failed pack leaves no
/// half-archive that a later `amk extract` could mistake for a good one.
struct PackCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pack",
        abstract: "Pack directories into an indexed .tar.xz archive.",
        discussion: """
            Each DIR is stored under its last path component: `amk pack ~/src/app -o app.tar.xz` \
            stores `app/...`. The archive is a standard .tar.xz that tar, xz and pixz read too.
            With `-o -` the archive goes to standard output and everything else (summary, -v, \
            --json) to standard error.

            Examples:
              amk pack ~/src/app -o app.tar.xz
              amk pack app --exclude '*.o' --exclude .git -o app.tar.xz
              amk pack app -o - | ssh host 'amk extract - -C /srv'
              amk pack app -o app.tar.xz --json | jq .ratio
            """
    )

    @Argument(
        help: ArgumentHelp(
            "Directories (or files) to pack; each is stored under its last path component (for . or .., the name of the folder it is).",
            valueName: "dir"),
        completion: .directory)
    var directories: [String]

    @Option(
        name: [.customShort("o"), .long],
        help: ArgumentHelp(
            "The archive to write (replaced if it exists); - writes it to standard output.",
            valueName: "archive"))
    var output: String

    @Option(help: "LZMA preset, 0 (fastest) to 9 (smallest).")
    var preset: Int = 6

    @Option(
        name: .customLong("nice-len"),
        help: ArgumentHelp(
            "Stop the match search at matches this long, 2 to 273 (xz's --lzma2=nice=N). "
                + "Default 16 at presets 5 and 6 (faster, a few % larger), the preset's own elsewhere; "
                + "64 gives preset 6's exact LZMA work.",
            valueName: "n"))
    var niceLength: Int?

    @Option(
        help: ArgumentHelp(
            ByteSize.chunkSizeHelp,
            valueName: "size"))
    var chunkSize: ByteSize = ByteSize(bytes: PackOptions().chunkSize)

    @Option(
        help: ArgumentHelp(
            "The most memory the encoders and the chunks in flight may hold together (256M, 1G); "
                + "fewer workers run when it is short, and a budget too small for one is refused. "
                + "Under ulimit -v, by default, what the limit leaves.",
            valueName: "size"))
    var memory: ByteSize?

    @Option(
        name: [.customShort("j"), .long],
        help: ArgumentHelp(
            "Compressing threads, 1 to 256 (default: one per core).",
            valueName: "n"))
    var jobs: Int?

    @Flag(help: "Store every block uncompressed (fastest; for data that does not compress).")
    var noCompress = false

    @Flag(
        inversion: .prefixedNo,
        help:
            "Compress blocks that are mostly linked x86 executables and shared libraries (ELF, Mach-O, PE; not .o or .a files) through xz's x86 filter, as xz --x86 does: smaller and faster to pack. Every xz decoder undoes it."
    )
    var x86Filter = true

    @Option(
        help: ArgumentHelp(
            "The order of each folder's members: 'type' groups them by extension, which makes the archive smaller (1.5% on many small files of a few kinds); 'name' sorts them by name, as ls does. A folder's members follow it either way.",
            valueName: "order"))
    var sort: MemberOrder = .type

    @Option(
        help: ArgumentHelp(
            "Seconds one read, compression or write may go without progress before the pack is cancelled as stalled; waiting for a busy compressor or a slow reader of the output does not count.",
            valueName: "seconds"))
    var stallTimeout: Double = 60

    @Option(
        name: .customLong("exclude"),
        help: ArgumentHelp(
            "Leave out entries matching this wildcard (fnmatch), as GNU tar matches it: against the path in the archive and each tail of it after a '/' ('*.o', '.git', 'build/*' at any depth). Repeatable.",
            valueName: "pattern"))
    var excludes: [String] = []

    @Option(
        help: ArgumentHelp(
            "Read more --exclude patterns from this file, one a line (blank lines ignored).",
            valueName: "file"),
        completion: .file())
    var excludeFrom: String?

    @Flag(help: "Do not descend into folders on other file systems (mount points are stored, empty).")
    var oneFileSystem = false

    @Flag(help: "Store extended attributes (as SCHILY.xattr.* pax records, as GNU tar --xattrs and bsdtar write them).")
    var xattrs = false

    @Flag(help: "Store POSIX ACLs (as SCHILY.acl.access/default pax records, as bsdtar writes them and GNU tar --acls reads them).")
    var acls = false

    @Flag(
        help:
            "Skip files and folders that cannot be read (permission denied), with a warning, as tar does, instead of failing the pack."
    )
    var skipUnreadable = false

    @Flag(
        help:
            "Store a file that changes while it is read (a log being written) as it was read, cut or padded with zeros to the size first seen, with a warning, instead of failing the pack."
    )
    var allowChanges = false

    @Flag(
        name: [.short, .long],
        help:
            "List each member as it is stored (on standard error when the archive or --json goes to standard output), with the engine's notices; its debug log is AMK_LOG=debug."
    )
    var verbose = false

    @Flag(name: [.short, .long], help: "Print no summary (warnings and errors still go to standard error).")
    var quiet = false

    @Flag(help: "Print the summary as a JSON object (see README, \"JSON output\").")
    var json = false

    @Flag(inversion: .prefixedNo, help: "Show a progress bar on standard error (default: only when it is a terminal).")
    var progress: Bool?

    func validate() throws {
        guard !directories.isEmpty else {
            throw ValidationError("Nothing to pack: give at least one directory.")
        }
        guard !output.isEmpty else {
            throw ValidationError("The output path (-o) is empty.")
        }
        guard (0...9).contains(preset) else {
            throw ValidationError("--preset must be 0 to 9, not \(preset).")
        }
        guard chunkSize.bytes >= 1 << 20, chunkSize.bytes <= 1 << 30 else {
            throw ValidationError("--chunk-size must be 1 MiB to 1 GiB, not \(chunkSize.bytes) bytes.")
        }
        if let niceLength, !(2...273).contains(niceLength) {
            throw ValidationError("--nice-len must be 2 to 273, not \(niceLength).")
        }
        if quiet && (json || verbose) {
            throw ValidationError("--quiet cannot be used with --json or --verbose.")
        }
        if output == "-" && isatty(STDOUT_FILENO) != 0 {
            throw ValidationError("Refusing to write an archive to a terminal (-o -); redirect standard output.")
        }
        if let jobs, !(1...256).contains(jobs) {
            throw ValidationError("--jobs must be 1 to 256, not \(jobs).")
        }
        try TransferTimeout.validate(stallTimeout, flag: "--stall-timeout")
        // Two sources with one last component would collide inside the archive; say so before
        // any work rather than fail halfway through.
        var seen: [String: String] = [:]
        for directory in directories {
            let name = Self.source(directory).archivePath
            if name == "." {
                throw ValidationError(
                    "'\(TerminalSafe.name(directory))' is the root folder, which has no name to store it under; pack the folders in it.")
            }
            if let earlier = seen[name] {
                throw ValidationError(
                    "'\(TerminalSafe.name(earlier))' and '\(TerminalSafe.name(directory))' "
                        + "would both be stored as '\(TerminalSafe.name(name))'.")
            }
            seen[name] = directory
        }
    }

    /// What `directory` is stored as: under its last component, as given; a `.` or `..` (`amk pack
    /// .` in the folder to pack) names no folder, so the folder it resolves to lends its name.
    /// `/` has none: it stays `.`, which `validate()` refuses.
    static func source(_ directory: String) -> PackSource {
        let source = PackSource(path: directory)
        guard source.archivePath == "." || source.archivePath == "..", directory.contains(where: { $0 != "/" }) else {
            return source
        }
        guard let resolved = RawName.withCString(directory, { realpath($0, nil) }) else { return source }
        defer { free(resolved) }
        let bytes = UnsafeBufferPointer(start: resolved, count: strlen(resolved)).map { UInt8(bitPattern: $0) }
        return PackSource(path: directory, archivePath: PackSource(path: RawName.decode(bytes)).archivePath)
    }

    func run() async throws {
        let sources = directories.map(Self.source)
        var options = packOptions()
        options.exclusion = PackExclusion(patterns: try exclusionPatterns(), oneFileSystem: oneFileSystem)
        options.storeExtendedAttributes = xattrs
        options.storeAccessControlLists = acls
        if skipUnreadable { options.unreadable = .warn }
        if allowChanges { options.changedWhileReading = .warn }
        let destination: ArchiveDestination = output == "-" ? .fileDescriptor(STDOUT_FILENO) : .file(output)
        // Whether the archive shares standard output, by `-` or by name.
        let toStandardOutput = output == "-" || StandardOutput.isTheSameFile(as: output)
        let showProgress = progress ?? StandardError.isTerminal
        options.logger = Diagnostics.tarLogger("amk.pack", verbose: verbose)
        if verbose {
            // Names on standard output, unless the archive or the JSON document is there: then
            // on standard error, so that what standard output holds stays whole.
            let fd = toStandardOutput || json ? STDERR_FILENO : STDOUT_FILENO
            options.onEvent = { event in
                if case .entryStored(let path, _) = event { StandardError.write(TerminalSafe.name(path) + "\n", to: fd) }
            }
        }

        let prepared = options
        let summary: PackSummary
        do {
            summary = try await pack(sources, to: destination, options: prepared, showProgress: showProgress)
        } catch var error as ArchiveError where !skipUnreadable && Self.isDenied(error, under: directories) {
            error.message += "; to pack the rest, skip what cannot be read (amk pack --skip-unreadable)"
            throw error
        }
        for warning in summary.warnings {
            // The path is a file name from the packed tree, which anyone with write access chose.
            StandardError.line("amk: warning: \(warning)")
        }
        if json {
            try JSONOutput.print(PackReport(summary, archive: output), toStandardError: toStandardOutput)
        } else if !quiet {
            // Never on standard output when the archive is there.
            if toStandardOutput { StandardError.line(Self.describe(summary)) } else { print(Self.describe(summary)) }
        }
    }

    /// `--exclude` patterns, then those of `--exclude-from`.
    func exclusionPatterns() throws -> [String] {
        guard let excludeFrom else { return excludes }
        var isFolder: ObjCBool = false
        if excludeFrom != "-", FileManager.default.fileExists(atPath: excludeFrom, isDirectory: &isFolder), isFolder.boolValue {
            throw ValidationError("Cannot read --exclude-from '\(TerminalSafe.name(excludeFrom))': it is a folder, not a file of patterns.")
        }
        // `-` is standard input, as for tar's `-X -` and amk's own `-T -`.
        let text: String
        do {
            let bytes = try MemberArguments.readAll(excludeFrom)
            guard let decoded = String(validating: bytes, as: UTF8.self) else {
                throw ValidationError("Cannot read --exclude-from '\(TerminalSafe.name(excludeFrom))': it is not UTF-8.")
            }
            text = decoded
        } catch let failure as MemberArguments.ReadFailure {
            throw ValidationError("Cannot read --exclude-from '\(TerminalSafe.name(excludeFrom))': \(failure.reason).")
        }
        // "\r\n" is one Character: split at "\n" alone, a file with Windows line ends was one
        // pattern that matched nothing (`-T` reads its names the same way).
        let lines = text.split(omittingEmptySubsequences: true, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
            .map { $0.hasSuffix("\r") ? String($0.dropLast()) : String($0) }
            .filter { !$0.isEmpty }
        return excludes + lines
    }

    /// Packs, Ctrl-C and SIGTERM cancelling, with a progress bar if asked.
    func pack(_ sources: [PackSource], to destination: ArchiveDestination, options prepared: PackOptions, showProgress: Bool)
        async throws -> PackSummary
    {
        try await SignalCancellation.run {
            var options = prepared
            var progress: PackProgress?
            if showProgress {
                // Measuring walks the trees once more; only worth it when someone watches.
                let total = try await ArchivePacker.contentSize(of: sources, exclusion: options.exclusion)
                let tracker = PackProgress(bar: ProgressBar(label: "packing", total: total), chunkSize: options.chunkSize)
                let listing = options.onEvent
                options.onEvent = { event in
                    listing?(event)
                    tracker.handle(event)
                }
                progress = tracker
            }
            defer { progress?.finish() }
            return try await ArchivePacker.pack(sources, to: destination, options: options)
        }
    }

    /// Whether `error` is a permission refused on something inside the trees being packed (not
    /// on the archive being written).
    static func isDenied(_ error: ArchiveError, under directories: [String]) -> Bool {
        guard error.code == .io(errno: EACCES) || error.code == .io(errno: EPERM), let path = error.path else { return false }
        return directories.contains { PathBytes.isSameOrUnder(path, $0) }
    }

    func packOptions() -> PackOptions {
        var options = PackOptions()
        options.preset = preset
        options.niceLength = niceLength
        options.filtersExecutables = x86Filter
        options.chunkSize = chunkSize.bytes
        if let jobs { options.workers = jobs }
        options.memoryBudget = memory?.bytes
        options.compressible = !noCompress
        options.order = sort.walkOrder
        options.stallPolicy = WatchdogPolicy(defaultStallTimeout: TransferTimeout.duration(stallTimeout))
        return options
    }

    /// `packed 21 entries, 5.6 MiB -> 1.2 MiB (21.4%) in 0.52 s, 10.8 MiB/s, 6 blocks (1 stored)`,
    /// and `, 2 x86` inside the parentheses when blocks went through the x86 filter.
    ///
    /// Sizes are of the tar stream (headers included) and the archive, so the percentage is the
    /// engine's ratio; the rate is tar bytes per second of wall-clock time.
    static func describe(_ summary: PackSummary) -> String {
        let rate = summary.seconds > 0 ? Double(summary.tarBytes) / summary.seconds : 0
        let percent = String(format: "%.1f%%", summary.ratio * 100)
        return "packed \(summary.entries) \(summary.entries == 1 ? "entry" : "entries"), "
            + "\(ByteSize.format(summary.tarBytes)) -> \(ByteSize.format(summary.archiveBytes)) (\(percent)) "
            + "in \(ByteSize.formatSeconds(summary.seconds)), \(ByteSize.formatRate(rate)), "
            + "\(summary.blocks) \(summary.blocks == 1 ? "block" : "blocks") (\(summary.storedBlocks) stored"
            + (summary.x86Blocks > 0 ? ", \(summary.x86Blocks) x86)" : ")")
    }
}
