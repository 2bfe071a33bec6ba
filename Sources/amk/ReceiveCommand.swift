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
            Prints 'listening on HOST:PORT' and a one-time 'pairing code' once it listens (port 0 \
            picks a free port); give the code to 'amk send --code'. A connection without the code is \
            closed before a byte reaches the container, and the wait goes on; after \
            --max-failed-pairings senders with a wrong code it gives up. Once a sender has paired, \
            no other can connect. Everything after the pairing is encrypted, and a record altered, \
            dropped, reordered or replayed fails the import. The import runs only after the whole \
            archive has arrived and been verified; a stream that breaks off, goes past \
            --max-archive-size (or the container volume's free space), or delivers less than 64 KiB \
            in an --idle-timeout leaves the container as it was and records a failed import. Exits \
            0 on success, 1 on failure.

            Examples:
              amk receive --listen 0.0.0.0:7070 --container tablet
              amk receive --listen [::]:7070 --container tablet --accept-timeout 600
              amk receive --listen 127.0.0.1:0 --container tablet --max-archive-size 2G
            """
    )

    @OptionGroup var options: ContainerOptions

    @Flag(
        help: ArgumentHelp(
            "Import into a folder that holds data but was never marked as an app container (.amk/container): "
                + "mark it first. A failed import clears it, which is why amk refuses such a folder without this flag."))
    var adoptContainer = false

    @Option(
        help: ArgumentHelp(
            "The address to listen on, HOST:PORT: 0.0.0.0:7070 (every IPv4 address), [::]:7070 "
                + "(every IPv6 and IPv4 one), 127.0.0.1:0 (a free port).", valueName: "host:port"))
    var listen: String

    @Option(
        help: ArgumentHelp(
            "The largest archive to accept (e.g. 2G); the free space of the container's volume "
                + "bounds it too.", valueName: "size"))
    var maxArchiveSize: ByteSize?

    @Option(help: ArgumentHelp("Give up after this many senders with a wrong pairing code.", valueName: "count"))
    var maxFailedPairings: Int = 5

    @Flag(inversion: .prefixedNo, help: "Show a progress bar on standard error (default: only when it is a terminal).")
    var progress: Bool?

    @Flag(name: [.short, .long], help: "Log the host's and the engine's diagnostics (swift-log, debug level) on standard error.")
    var verbose = false

    @Option(
        // A value such as -2 is taken as the value, and refused as one, not read as a flag.
        parsing: .unconditional,
        help: ArgumentHelp(
            "Give up if no sender connects within this many seconds (default: wait for good).",
            valueName: "seconds"))
    var acceptTimeout: Double?

    @Option(
        // A value such as -2 is taken as the value, and refused as one, not read as a flag.
        parsing: .unconditional,
        help: ArgumentHelp(
            "Fail if the sender delivers less than 64 KiB of the archive in this many seconds.",
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
        guard (1...100).contains(maxFailedPairings) else {
            throw ValidationError("--max-failed-pairings must be 1 to 100, not \(maxFailedPairings).")
        }
    }

    func run() async throws {
        let container = try options.dataContainer(creatingFolders: false)
        let chosen = try options.extensionChoice.resolve(default: .files)
        // Before listening: a sender must not pair with a receiver that will refuse the import.
        try ContainerOptions.importTarget(container, adopt: adoptContainer, extensionName: chosen.name)
        // Locked before listening, and until the import is over: a second receive (or an import)
        // into this container is refused before it shows a code that a sender would pair with.
        try await ContainerLock.reserving(container, extensionName: chosen.name) {
            try await receive(into: container, using: chosen)
        }
    }

    private func receive(
        into container: MigrationDataContainer, using chosen: (executable: ExtensionExecutable, name: String)
    ) async throws {
        let listener = try TransferListener(try TransferEndpoint(parsing: listen))
        let acceptTimeout = self.acceptTimeout.map(TransferTimeout.duration)
        let idleTimeout = TransferTimeout.duration(self.idleTimeout)
        let pairingCode = PairingCode.random()
        let maxArchiveBytes = maxArchiveSize.map { UInt64($0.bytes) }
        let maxFailedPairings = self.maxFailedPairings
        print("listening on \(listener.endpoint)")
        print("pairing code \(pairingCode)")
        // The lines must reach a pipe or file now: the caller waits for them. Unwritten (a full
        // disk), no sender could learn the code, and the wait would be for nothing, for good.
        if let failure = StandardOutput.flushFailure() { throw failure }
        // The import's share of the whole: a quarter once the archive has arrived and been
        // verified, the rest as the extension imports.
        let shown = Progress(totalUnitCount: 100)
        var system = MigrationSystem()
        system.logger = Diagnostics.logger("amk.receive", verbose: verbose)
        let configured = system
        let request = try await ProgressMonitor.run(
            shown, label: "receiving", show: progress ?? StandardError.isTerminal,
            unit: .fraction
        ) {
            try await SignalCancellation.run {
                try await configured.receive(
                    chosen.executable, named: chosen.name, into: container, on: listener, pairingCode: pairingCode,
                    acceptTimeout: acceptTimeout, idleTimeout: idleTimeout, maxArchiveBytes: maxArchiveBytes,
                    maxFailedPairings: maxFailedPairings,
                    onRefused: { refusal in
                        StandardError.write("amk: refused a connection: \(refusal.description)\n")
                    }, progress: shown)
            }
        }
        let source = request.sourceAppIdentifier
        // The source app, its platform and version are what the sender's archive says.
        print(
            "imported into \(TerminalSafe.name(container.containerRootDirectory.path(percentEncoded: false)))"
                + " from \(TerminalSafe.name(source.bundleIdentifier))"
                + " (\(TerminalSafe.name(source.platform.rawValue)), version \(TerminalSafe.name(request.sourceVersion)))")
    }
}
