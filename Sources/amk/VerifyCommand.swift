import ArgumentParser
import IndexedArchive

/// `amk verify A`: decodes every block, checks every block check and member checksum, and
/// compares the tar stream with the index. Writes nothing.
struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check an archive's integrity without extracting it.",
        discussion: "Exits 0 and prints 'OK: N members verified', or prints the first problem (with its offset) and exits 1."
    )

    @Argument(help: ArgumentHelp("The archive to verify.", valueName: "archive"), completion: .file())
    var archive: String

    func run() async throws {
        let path = archive
        let count = try await SignalCancellation.run {
            try await ArchiveReader.open(path: path).verify()
        }
        print("OK: \(count) \(count == 1 ? "member" : "members") verified")
    }
}
