import ArgumentParser
import IndexedArchive

/// `-T FILE` / `--files-from FILE` of `list` and `extract` (tar's `-T`): more member names, one a
/// line, as `amk list` prints them (``MemberArguments/read(from:)``).
struct MemberFileOption: ParsableArguments {
    @Option(
        name: [.customShort("T"), .customLong("files-from")],
        help: ArgumentHelp(
            "Also select the members named in this file, one a line, as `amk list` prints them; - reads standard input.",
            valueName: "file"),
        completion: .file())
    var filesFrom: String?

    /// Standard input cannot hold both the archive and the names.
    func validate(archive: String) throws {
        if filesFrom == "-" && archive == "-" {
            throw ValidationError("--files-from - and the archive - cannot both be standard input.")
        }
    }

    /// `given` and the names in the file. A file without a name is an error rather than a
    /// selection of nothing, which would mean every member.
    func names(adding given: [String]) async throws -> [String] {
        guard let filesFrom else { return given }
        // Standard input or a FIFO may keep the read waiting: on a thread of its own, not one of
        // the cooperative pool's.
        let thread = WorkerThreadPool(threads: 1, name: "amk-files-from")
        defer { thread.shutdown() }
        let read = try await thread.run(abandonOnCancel: true) { _ in try MemberArguments.read(from: filesFrom) }
        guard !read.isEmpty || !given.isEmpty else {
            throw ValidationError("'\(filesFrom)' names no member: give at least one, or leave --files-from out to take them all.")
        }
        return given + read
    }
}
