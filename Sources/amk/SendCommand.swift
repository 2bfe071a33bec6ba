import AppMigration
import ArgumentParser
import Foundation

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

    func validate() throws {
        do {
            _ = try TransferEndpoint(parsing: to)
        } catch let error as TransferError {
            throw ValidationError(error.message)
        }
    }

    func run() async throws {
        let endpoint = try TransferEndpoint(parsing: to)
        let container = try options.dataContainer()
        let name = options.extensionName
        let (exported, message) = try await SignalCancellation.run {
            try await MigrationSystem().send(ContainerFilesMigration(), named: name, from: container,
                                             request: MigrationRequest(destinationPlatform: .current), to: endpoint)
        }
        let compressed = exported.compressedBytes.map { ", \($0) compressed" } ?? ""
        print("sent \(exported.uncompressedBytes) bytes\(compressed) to \(endpoint) (version \(exported.version))")
        print("receiver: \(message)")
    }
}
