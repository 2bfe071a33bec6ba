import ArgumentParser
import Foundation
import IndexedArchive
import Synchronization

/// `amk list A`: the members of an archive, from its index when it has one (no decompression),
/// otherwise by reading it through.
///
/// Names are printed through ``TerminalSafe/name(_:)``: one line per member whatever its name
/// holds, and no escape sequence from an archive reaches the terminal. `--json` prints the real
/// names, as JSON escapes where a terminal would act on them (``terminalSafeJSON(_:)``).
struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the members of an archive.",
        discussion: """
            An archive with an amk index is listed from the index alone, without decompressing; \
            any other .tar.xz, and one read from a pipe (`-`), is read through once. Members \
            given after the archive are listed alone, as `amk extract` would choose them (a \
            folder with everything under it); a name that matches nothing is an error, after \
            the others are listed.

            Examples:
              amk list app.tar.xz
              amk list -l app.tar.xz
              amk list app.tar.xz app/Documents
              amk list --json app.tar.xz | jq -r '.[] | select(.type == "file") | .path'
              curl -s https://example.com/app.tar.xz | amk list -
            """
    )

    @Argument(help: ArgumentHelp("The archive to list; - reads standard input.", valueName: "archive"), completion: .file())
    var archive: String

    @Argument(
        help: ArgumentHelp(
            "Members to list, as `amk list` prints them, escapes such as \\n and \\\\ included (default: all).",
            valueName: "member"))
    var members: [String] = []

    @OptionGroup var memberFile: MemberFileOption

    @Flag(name: [.short, .long], help: "Show mode, size and modification time, like tar -tv.")
    var long = false

    @Flag(name: [.customShort("v"), .customLong("verbose")], help: "The same as --long (tar's -tv).")
    var verbose = false

    @Flag(help: "Print a JSON array of objects (path, type, size, mode, uid, gid, mtime, linkTarget).")
    var json = false

    /// The archive of `amk list ARCHIVE`, with no option: nil for any other command line.
    ///
    /// Listing is what scripts run by the thousand, and ArgumentParser finds a command's options
    /// by reflecting over it, a millisecond of a listing that takes fifteen. Such a command line
    /// is run as ``list(_:long:json:)`` directly, as parsing it would run it; anything else (an
    /// option, a second archive, help) is parsed as usual.
    static func plainArchive(in arguments: [String]) -> String? {
        guard arguments.count == 3, arguments[1] == configuration.commandName else { return nil }
        let archive = arguments[2]
        guard archive == "-" || !archive.hasPrefix("-"), archive != "help" else { return nil }
        return archive
    }

    func validate() throws {
        if (long || verbose) && json {
            throw ValidationError("--long and --json cannot be used together.")
        }
        try memberFile.validate(archive: archive)
    }

    func run() async throws {
        // Names are given as `amk list` prints them: undo its escapes, as extract does.
        let names = try await memberFile.names(adding: members)
        try await Self.list(archive, long: long || verbose, json: json, members: names.map(TerminalSafe.parseName))
    }

    /// Lists `argument` (a path, or - for standard input): its paths, or with `long` or `json`
    /// every field; with `members`, only what they select (``MemberSelection``), then an error
    /// naming those that select nothing.
    static func list(_ argument: String, long: Bool, json: Bool, members: [String] = []) async throws {
        // The printing too is interruptible: a listing blocked on a full pipe (`amk list -l A |
        // less`) was killed by the signal's default action, with no message and status 128+N.
        // A write that does not return is ended by SignalCancellation's deadline.
        try await SignalCancellation.run {
            try await listUninterrupted(argument, long: long, json: json, members: members)
            if let failure = StandardOutput.flushFailure() { throw failure }
        }
    }

    private static func listUninterrupted(_ argument: String, long: Bool, json: Bool, members: [String]) async throws {
        let details = long || json || !members.isEmpty
        var listed: Listed
        switch try await ArchiveInput.resolve(argument) {
        case .file(let path) where !details:
            listed = .paths(
                try await ArchiveReader.memberPathList(path: path) { Diagnostics.noteIndexSkipped($0, path: path) })
        case .file(let path):
            let reader = try await Self.opened(path)
            if reader.mode == .indexed || !members.isEmpty {
                // The index's entries: as many as the archive's size allows.
                listed = .entries(try await reader.entries())
            } else {
                // Without the index, what the tar stream holds is known only as it is read, and
                // may be millions of members in a few kilobytes: printed as they come, as from a
                // pipe (2,097,152 empty members in 156 KB took 2.6 GB to list as JSON).
                let fd = try ArchiveInput.openForReading(path)
                defer { close(fd) }
                listed = .printed(try await printMembers(from: fd, long: long, json: json))
            }
        case .stream(let fd, _) where members.isEmpty:
            // Printed as the members come, so that a stream of any number of them is listed
            // in the same memory.
            listed = .printed(try await printMembers(from: fd, long: long, json: json))
        case .stream(let fd, _):
            listed = .entries(try await ArchiveStreamReader.scan(from: fd).entries)
        }
        var unmatched: [String] = []
        if !members.isEmpty, case .entries(let entries) = listed {
            let selection = MemberSelection(members)
            unmatched = selection.unmatched(in: entries.lazy.map(\.path), order: members)
            listed = .entries(entries.filter { selection.selects($0.path) })
        }
        switch listed {
        case .entries(let entries) where json:
            try JSONOutput.print(entries.map(ListedEntry.init))
        case .entries(let entries):
            let listing = long ? LongListing(entries: entries) : nil
            try StandardOutput.check(write(entries) { listing?.line(for: $0) ?? TerminalSafe.name($0.path) })
        case .paths(let paths):
            try StandardOutput.check(write(paths))
        case .printed(let failure):
            try StandardOutput.check(failure)
        }
        // After the listing, as tar reports them: what was found is listed all the same.
        if !unmatched.isEmpty {
            throw ExtractCommand.noMatch(unmatched, path: argument == "-" ? "standard input" : argument)
        }
    }

    /// A reader of `path`, having noted an index it leaves unread.
    static func opened(_ path: String) async throws -> ArchiveReader {
        let reader = try await ArchiveReader.open(path: path)
        Diagnostics.noteIndexSkipped(reader.indexSkipped, path: path)
        return reader
    }

    /// `amk list FILE` of an archive with our index, on the calling thread; false, having
    /// printed nothing, for anything else (standard input, a FIFO, an archive without the
    /// index), which ``list(_:long:json:)`` then lists.
    ///
    /// Called from `main` before any concurrent work starts, it reads and prints without a
    /// thread of its own or a hop to the cooperative pool: creating those threads (their stacks,
    /// their allocator arenas) was a tenth of listing a real tree, 13,891 members in 10 ms.
    /// Nothing is written but standard output, so an interrupt needs no cleanup: it ends amk as
    /// it ends any command, with `amk: interrupted` and status 1, from a plain handler.
    static func listIndexedFileBlocking(_ argument: String) throws -> Bool {
        var info = stat()
        guard argument != "-", stat(argument, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return false }
        // A parent may have started amk with these signals blocked (the other commands take
        // them from a signal source, which blocks them anyway): a handler needs them delivered.
        var signals = sigset_t()
        sigemptyset(&signals)
        for number in SignalCancellation.signals {
            signal(number, interrupted)
            sigaddset(&signals, number)
        }
        pthread_sigmask(SIG_UNBLOCK, &signals, nil)
        defer { for number in SignalCancellation.signals { signal(number, SIG_DFL) } }
        guard let paths = try ArchiveReader.memberPathListBlocking(path: argument) else { return false }
        try StandardOutput.check(write(paths))
        return true
    }

    /// The interrupt handler of ``listIndexedFileBlocking(_:)``: only `write(2)` and `_exit(2)`,
    /// which a signal handler may call.
    private static let interrupted: @convention(c) (Int32) -> Void = { _ in
        let message: StaticString = "amk: interrupted\n"
        _ = Glibc.write(STDERR_FILENO, message.utf8Start, message.utf8CodeUnitCount)
        _exit(1)
    }

    /// What the archive gave: every field, or (for a plain listing of an indexed archive) the
    /// paths alone, which its index gives without decoding the rest.
    private enum Listed: Sendable {
        case entries([ArchiveEntry])
        case paths(MemberPathList)
        /// Printed already, as the stream was read; with the `errno` of a write that failed.
        case printed(Int32?)
    }

    /// Prints the members of the stream on `fd` as they come (their paths; with `long`, as
    /// `tar -tv` does; with `json`, as the elements of one array), and returns the `errno` of a
    /// write that failed (the reading stops there). What is held does not grow with the members:
    /// `long`'s size column widens as larger sizes come, as GNU tar's does, and the lines before
    /// stay as they were.
    private static func printMembers(from fd: Int32, long: Bool, json: Bool) async throws -> Int32? {
        // Called on the reading's one thread, member after member; the Mutex makes that
        // visible to the compiler, and is never contended.
        struct State {
            var out = ListingOutput()
            var members = 0
            var sizeWidth = 6
        }
        let output = Mutex(State())
        struct OutputFailed: Error {}
        do {
            _ = try await ArchiveStreamReader.scan(
                from: fd, keepingEntries: false,
                onMember: { entry in
                    let element = json ? try JSONOutput.text(ListedEntry(entry)) : nil
                    try output.withLock { state in
                        if let element {
                            state.out.bytes.append(contentsOf: (state.members == 0 ? "[\n" : ",\n").utf8)
                            for (index, line) in element.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                                if index > 0 { state.out.bytes.append(UInt8(ascii: "\n")) }
                                state.out.bytes.append(contentsOf: "  ".utf8)
                                state.out.bytes.append(contentsOf: line.utf8)
                            }
                            if state.out.bytes.count >= listingPiece { state.out.flush() }
                        } else if long {
                            state.sizeWidth = max(state.sizeWidth, String(entry.size).count)
                            state.out.bytes.append(contentsOf: LongListing(sizeWidth: state.sizeWidth).line(for: entry).utf8)
                            guard state.out.endLine() else { throw OutputFailed() }
                        } else {
                            state.out.bytes.append(contentsOf: TerminalSafe.name(entry.path).utf8)
                            guard state.out.endLine() else { throw OutputFailed() }
                        }
                        state.members += 1
                    }
                })
        } catch is OutputFailed {
            return output.withLock { $0.out.failure }
        } catch {
            // What was listed before the damage stays listed, as tar leaves it.
            output.withLock { $0.out.flush() }
            throw error
        }
        let empty = json ? try JSONOutput.text([ListedEntry]()) : ""
        return output.withLock { state in
            if json {
                state.out.bytes.append(contentsOf: (state.members == 0 ? empty : "\n]").utf8)
                _ = state.out.endLine()
            }
            state.out.flush()
            return state.out.failure
        }
    }

    /// Each path on a line, escaped, in writes of ``listingPiece`` bytes; the `errno` of a write
    /// that failed, if one did.
    private static func write(_ paths: MemberPathList) -> Int32? {
        var out = ListingOutput()
        for index in 0..<paths.count {
            TerminalSafe.appendName(paths[index], to: &out.bytes)
            guard out.endLine() else { return out.failure }
        }
        out.flush()
        return out.failure
    }

    /// Each item's line, in writes of ``listingPiece`` bytes. A print per line costs a lock and a
    /// call each, which for thousands of members is most of what listing from the index takes;
    /// the lines are gathered as bytes, which a native string copies out whole (appending to a
    /// String checks each one).
    private static func write<T>(_ items: [T], line: (T) -> String) -> Int32? {
        var out = ListingOutput()
        for item in items {
            out.bytes.append(contentsOf: line(item).utf8)
            guard out.endLine() else { return out.failure }
        }
        out.flush()
        return out.failure
    }

    /// How much of a listing is gathered before it is written. The whole listing in one buffer
    /// grew with the archive (a million members, 60 MB) and, at 13,891 members, its 0.8 MB of
    /// fresh pages took a tenth of the listing's time; a piece this size is written with one
    /// call and its pages are reused.
    static let listingPiece = 64 * 1024

    /// Standard output in pieces of ``listingPiece`` bytes.
    struct ListingOutput {
        var bytes: [UInt8] = []
        /// How many times the bytes were written; for the tests.
        private(set) var writes = 0
        private let fd: Int32
        /// The `errno` of the write that failed; nothing is written after it.
        private(set) var failure: Int32?
        private var failed: Bool { failure != nil }

        init(fd: Int32 = STDOUT_FILENO) {
            self.fd = fd
            bytes.reserveCapacity(listingPiece + 4096)
        }

        /// Ends the line and writes the piece once it is full; false once the output refused a
        /// piece (a closed pipe), after which nothing more is written.
        mutating func endLine() -> Bool {
            bytes.append(UInt8(ascii: "\n"))
            if bytes.count >= listingPiece { flush() }
            return !failed
        }

        /// Writes what is gathered.
        mutating func flush() {
            guard !failed, !bytes.isEmpty else { return }
            if !StandardError.write(bytes, to: fd) { failure = errno }
            writes += 1
            bytes.removeAll(keepingCapacity: true)
        }
    }

    /// `json` with the characters ``TerminalSafe`` escapes written as `\uXXXX`.
    ///
    /// The encoder escapes C0 controls itself but writes DEL, the C1 controls, the line
    /// separators and the bidi overrides raw, and JSON is often read on a terminal. They can only
    /// occur inside strings, where the escape means the same character: the output is the same
    /// JSON to any parser.
    static func terminalSafeJSON(_ json: String) -> String {
        guard json.unicodeScalars.contains(where: { $0 != "\n" && TerminalSafe.needsEscape($0) }) else { return json }
        var out = String.UnicodeScalarView()
        for scalar in json.unicodeScalars {
            if scalar != "\n" && TerminalSafe.needsEscape(scalar) {
                let digits = String(scalar.value, radix: 16)
                out.append(contentsOf: ("\\u" + String(repeating: "0", count: 4 - digits.count) + digits).unicodeScalars)
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }
}
