import AppMigration
import ArgumentParser
import Foundation
import IndexedArchive
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `amk receive`: waits for one `amk send` and imports what it sends, as it arrives.
struct ReceiveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "receive",
        abstract: "Wait for one 'amk send' and import its data into a container as it arrives.",
        discussion: """
            Prints 'listening on HOST:PORT' once it listens (port 0 picks a free port). The import \
            runs only after the whole archive has arrived and been verified; a stream that breaks \
            off leaves the container as it was and records a failed import. A sender that sends no \
            hello within 30 s, or less than 64 KiB of the archive in an --idle-timeout, is cut off \
            the same way. Exits 0 on success, 1 on failure.

            Examples:
              amk receive --listen 0.0.0.0:7070 --container tablet
              amk receive --listen 127.0.0.1:0 --container tablet --accept-timeout 60
            """
    )

    @OptionGroup var options: ContainerOptions

    @Option(help: ArgumentHelp("The address to listen on, HOST:PORT (IPv4), e.g. 127.0.0.1:7070.", valueName: "host:port"))
    var listen: String

    @Option(help: ArgumentHelp("Give up if no sender connects within this many seconds (default: wait for good).",
                               valueName: "seconds"))
    var acceptTimeout: Double?

    @Option(help: ArgumentHelp("Fail if the sender delivers less than 64 KiB of the archive in this many seconds.",
                               valueName: "seconds"))
    var idleTimeout: Double = 60

    func validate() throws {
        do {
            _ = try TransferEndpoint(parsing: listen)
        } catch let error as TransferError {
            throw ValidationError(error.description)
        }
        try acceptTimeout.map { try TransferTimeout.validate($0, flag: "--accept-timeout") }
        try TransferTimeout.validate(idleTimeout, flag: "--idle-timeout")
    }

    func run() async throws {
        let listener = try TransferListener(try TransferEndpoint(parsing: listen))
        let container = try options.dataContainer()
        let name = options.extensionName
        let acceptTimeout = self.acceptTimeout.map(TransferTimeout.duration)
        let idleTimeout = TransferTimeout.duration(self.idleTimeout)
        print("listening on \(listener.endpoint)")
        fflush(nil) // the line must reach a pipe or file now: the caller waits for it
        let request = try await SignalCancellation.run {
            try await MigrationSystem().receive(ContainerFilesMigration(), named: name, into: container, on: listener,
                                                acceptTimeout: acceptTimeout, idleTimeout: idleTimeout)
        }
        let source = request.sourceAppIdentifier
        // The source app, its platform and version are what the sender's archive says.
        print("imported into \(TerminalSafe.name(container.containerRootDirectory.path(percentEncoded: false)))"
              + " from \(TerminalSafe.name(source.bundleIdentifier))"
              + " (\(TerminalSafe.name(source.platform.rawValue)), version \(TerminalSafe.name(request.sourceVersion)))")
    }
}
