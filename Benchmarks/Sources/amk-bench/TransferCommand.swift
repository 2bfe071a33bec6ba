import AppMigration
import ArgumentParser
import Foundation

/// `amk-bench transfer`: what pairing and encryption cost a migration, in this process with the
/// library API. The same container migrates, alternately, through a pipe in one process
/// (`MigrationSystem.migrate`, plaintext) and over a paired, encrypted loopback connection
/// (`send` and `receive`); the compressor, not the cipher, should bound both.
struct TransferCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "transfer",
        abstract: "Compare an encrypted loopback transfer with a plaintext pipe migration of the same container."
    )

    @OptionGroup var options: ContainerCorpus

    func run() async throws {
        let log: (String) -> Void = { FileHandle.standardError.write(Data(($0 + "\n").utf8)) }
        let work = URL(fileURLWithPath: NSTemporaryDirectory()).appending(path: "amk-bench-transfer-\(getpid())")
        defer { try? FileManager.default.removeItem(at: work) }
        let (source, bytes) = try options.sourceContainer(in: work, log: log)
        let (runs, preset) = (options.runs, options.preset)
        let system = MigrationSystem(compressionPreset: preset)
        var plain: [Double] = [], encrypted: [Double] = []
        for round in 1...runs {
            let plainTarget = try Self.freshContainer(work, "plain-\(round)")
            var start = ContinuousClock.now
            _ = try await system.migrate(exporting: DocumentsMigration(), from: source, request: MigrationRequest(destinationPlatform: .current),
                                         importing: DocumentsMigration(), into: plainTarget)
            plain.append((ContinuousClock.now - start).seconds)
            try FileManager.default.removeItem(at: plainTarget.containerRootDirectory)

            let target = try Self.freshContainer(work, "encrypted-\(round)")
            let listener = try TransferListener(TransferEndpoint(host: "127.0.0.1", port: 0))
            let code = PairingCode.random()
            start = ContinuousClock.now
            async let received = system.receive(DocumentsMigration(), into: target, on: listener, pairingCode: code,
                                                acceptTimeout: .seconds(60))
            _ = try await system.send(DocumentsMigration(), from: source, request: MigrationRequest(destinationPlatform: .current),
                                      to: listener.endpoint, pairingCode: code)
            _ = try await received
            encrypted.append((ContinuousClock.now - start).seconds)
            try FileManager.default.removeItem(at: target.containerRootDirectory)
            log(String(format: "round %d: plaintext pipe %.2f s, encrypted loopback %.2f s", round, plain.last!, encrypted.last!))
        }
        let mib = Double(bytes) / 1_048_576
        let plainMedian = Self.median(plain), encryptedMedian = Self.median(encrypted)
        print(String(format: "TRANSFER (%.1f MiB, preset %d, %d rounds, medians [min-max])", mib, preset, runs))
        print(String(format: "  plaintext pipe (migrate)      %6.2f s [%.2f-%.2f]  %6.1f MiB/s", plainMedian, plain.min()!, plain.max()!,
                     mib / plainMedian))
        print(String(format: "  encrypted loopback (send)     %6.2f s [%.2f-%.2f]  %6.1f MiB/s", encryptedMedian, encrypted.min()!,
                     encrypted.max()!, mib / encryptedMedian))
        print(String(format: "  encrypted throughput / plaintext throughput: %.3f", plainMedian / encryptedMedian))
    }

    static func freshContainer(_ work: URL, _ name: String) throws -> MigrationDataContainer {
        let container = MigrationDataContainer(bundleIdentifier: "bench.target", containerRootDirectory: work.appending(path: name))
        try container.createStandardDirectories()
        return container
    }

    static func size(of directory: URL) throws -> Int {
        var total = 0
        let walker = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: [.fileSizeKey])
        while let item = walker?.nextObject() as? URL {
            total += (try? item.resourceValues(forKeys: [.fileSizeKey]).fileSize) ?? 0
        }
        return total
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }
}

/// The container's `Documents`, exported whole and imported by moving the received folder into
/// place: the least an extension can do, so that the transport is what is measured.
struct DocumentsMigration: ResourcesExporting, ResourcesImporting {
    var resourcesVersion: String { "1" }
    let resourcesImportProgress = Progress(totalUnitCount: 1)
    var resourcesCompressible: Bool { true }
    var resourcesSizeEstimate: Int { get async { 0 } }

    func exportResources(to archiver: sending ResourcesArchiver, request: MigrationRequest) async throws {
        try await archiver.appendItem(at: appContainer.documentsDirectory, pathInArchive: "Documents")
    }

    func importResources(at url: URL, request: ResourcesImportRequest) async throws {
        let target = appContainer.documentsDirectory
        try? FileManager.default.removeItem(at: target)
        try FileManager.default.moveItem(at: url.appending(path: "Documents"), to: target)
        resourcesImportProgress.completedUnitCount = 1
    }
}
