import AppMigration
import ArgumentParser
import Foundation
import IndexedArchive

/// `amk send`: exports an app's data straight onto a TCP connection to `amk receive`.
struct SendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Export an app's data over TCP to 'amk receive'; the archive is never written to disk.",
        discussion: """
            Give it the pairing code that 'amk receive' shows (--code). Nothing is exported before \
            the receiver has proved it holds the same code; everything after is encrypted \
            (X25519, HKDF-SHA256, ChaCha20-Poly1305: see the README). Exits 0 once the receiver \
            reports that its import succeeded. Exits 1 if the code is refused, the export fails, the \
            receiver's import fails (its reason is printed), or the connection is lost. No wait \
            for the receiver is unbounded: the handshake must end within 30 s, it must take at least \
            64 KiB of the archive in every --idle-timeout, and its report must come within \
            --status-timeout of the archive's end.

            Examples:
              amk send --container phone --to 192.168.1.20:7070 --code 7KQ2-9XMF-3PWD-HB6T
              amk send --container phone --to tablet.local:7070 --code 7kq29xmf3pwdhb6t
              amk send --container phone --to [::1]:7070 --code 7KQ29XMF3PWDHB6T --preset 0
            """
    )

    @OptionGroup var options: ContainerOptions

    @Option(
        help: ArgumentHelp(
            "The receiver's address, HOST:PORT: a name, an IPv4 address, or an IPv6 one in brackets "
                + "([::1]:7070).", valueName: "host:port"))
    var to: String

    @Option(
        help: ArgumentHelp(
            "The pairing code the receiver shows (case, dashes and spaces do not matter).",
            valueName: "code"))
    var code: String

    @Option(help: "LZMA preset, 0 (fastest) to 9 (smallest).")
    var preset: Int = 6

    @Option(
        help: ArgumentHelp(
            ByteSize.chunkSizeHelp + " Smaller blocks reach the receiver sooner.",
            valueName: "size"))
    var chunkSize: ByteSize = ByteSize(bytes: PackOptions().chunkSize)

    @Option(
        // A value such as -2 is taken as the value, and refused as one, not read as a flag.
        parsing: .unconditional,
        help: ArgumentHelp(
            "Fail if the receiver takes less than 64 KiB of the archive in this many seconds.",
            valueName: "seconds"))
    var idleTimeout: Double = 60

    @Option(
        // A value such as -2 is taken as the value, and refused as one, not read as a flag.
        parsing: .unconditional,
        help: ArgumentHelp(
            "Once the whole archive has gone, wait this many seconds for the receiver to report its "
                + "import (it runs its importer meanwhile).", valueName: "seconds"))
    var statusTimeout: Double = 300

    @Flag(inversion: .prefixedNo, help: "Show a progress bar on standard error (default: only when it is a terminal).")
    var progress: Bool?

    @Flag(name: [.short, .long], help: "Log the host's and the engine's diagnostics (swift-log, debug level) on standard error.")
    var verbose = false

    func validate() throws {
        try TransferTimeout.validate(idleTimeout, flag: "--idle-timeout")
        try TransferTimeout.validate(statusTimeout, flag: "--status-timeout")
        guard (0...9).contains(preset) else {
            throw ValidationError("--preset must be 0 to 9, not \(preset).")
        }
        guard chunkSize.bytes >= 1 << 20, chunkSize.bytes <= 1 << 30 else {
            throw ValidationError("--chunk-size must be 1 MiB to 1 GiB, not \(chunkSize.bytes) bytes.")
        }
        do {
            _ = try TransferEndpoint(parsing: to)
            _ = try PairingCode(parsing: code)
        } catch let error as TransferError {
            throw ValidationError(error.description)
        }
        // As export: what is sent is the container's data. A misspelt path was made into an
        // empty container and sent, and both sides said it was imported.
        try ContainerOptions.requireFolder(options.container)
    }

    func run() async throws {
        let endpoint = try TransferEndpoint(parsing: to)
        let pairingCode = try PairingCode(parsing: code)
        let container = try options.dataContainer(creatingFolders: true)
        let chosen = try options.extensionChoice.resolve(default: .files)
        var system = MigrationSystem(compressionPreset: preset, chunkSize: chunkSize.bytes)
        // Printed once the bar is gone, whether the export ends well or not.
        let warnings = ExportWarnings()
        defer { warnings.print() }
        system.logger = warnings.logger("amk.send", verbose: verbose)
        let configured = system
        let idle = TransferTimeout.duration(idleTimeout)
        let status = TransferTimeout.duration(statusTimeout)
        // Units of 0: the host counts the export's bytes against the extension's size estimate.
        let shown = Progress(totalUnitCount: 0)
        let (exported, message) = try await ProgressMonitor.run(
            shown, label: "sending", show: progress ?? StandardError.isTerminal,
            unit: .bytes
        ) {
            try await SignalCancellation.run {
                try await configured.send(
                    chosen.executable, named: chosen.name, from: container,
                    request: MigrationRequest(destinationPlatform: .current), to: endpoint, pairingCode: pairingCode,
                    idleTimeout: idle, statusTimeout: status, progress: shown)
            }
        }
        let compressed = exported.compressedBytes.map { ", \($0) compressed" } ?? ""
        print("sent \(exported.uncompressedBytes) bytes\(compressed) to \(endpoint) (version \(TerminalSafe.name(exported.version)))")
        // The receiver's words: whoever runs the other end chose them.
        print("receiver: \(TerminalSafe.message(message))")
    }
}
