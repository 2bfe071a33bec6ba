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
            Exits 0 once the receiver reports that its import succeeded. Exits 1 if the export fails, \
            the receiver's import fails (its reason is printed), or the connection is lost.
            """
    )

    @OptionGroup var options: ContainerOptions

    @Option(help: ArgumentHelp("The receiver's address, HOST:PORT (IPv4), e.g. 127.0.0.1:7070.", valueName: "host:port"))
    var to: String

    @Option(help: "LZMA preset, 0 (fastest) to 9 (smallest).")
    var preset: Int = 6

    @Option(help: ArgumentHelp("Uncompressed bytes per xz block, 1MiB to 1GiB. Smaller blocks reach the receiver sooner.",
                               valueName: "size"))
    var chunkSize: ByteSize = ByteSize(bytes: 16 << 20)

    func validate() throws {
        guard (0...9).contains(preset) else {
            throw ValidationError("--preset must be 0 to 9, not \(preset).")
        }
        guard chunkSize.bytes >= 1 << 20, chunkSize.bytes <= 1 << 30 else {
            throw ValidationError("--chunk-size must be 1 MiB to 1 GiB, not \(chunkSize.bytes) bytes.")
        }
        do {
            _ = try TransferEndpoint(parsing: to)
        } catch let error as TransferError {
            throw ValidationError(error.description)
        }
    }

    func run() async throws {
        let endpoint = try TransferEndpoint(parsing: to)
        let container = try options.dataContainer()
        let name = options.extensionName
        let system = MigrationSystem(compressionPreset: preset, chunkSize: chunkSize.bytes)
        let (exported, message) = try await SignalCancellation.run {
            try await system.send(ContainerFilesMigration(), named: name, from: container,
                                             request: MigrationRequest(destinationPlatform: .current), to: endpoint)
        }
        let compressed = exported.compressedBytes.map { ", \($0) compressed" } ?? ""
        print("sent \(exported.uncompressedBytes) bytes\(compressed) to \(endpoint) (version \(TerminalSafe.name(exported.version)))")
        // The receiver's words: whoever runs the other end chose them.
        print("receiver: \(TerminalSafe.message(message))")
    }
}
