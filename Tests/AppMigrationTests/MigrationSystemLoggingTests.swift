import AppMigration
import ArchiveTestSupport
import Foundation
import Logging
import Testing

/// The host's diagnostics go through swift-log, to the logger its caller hands it.
@Suite struct MigrationSystemLoggingTests {
    /// An export and an import each log their start and end, naming the extension; the engine's
    /// own diagnostics (the extraction into staging) come through the same logger.
    @Test func anExportAndAnImportLogStartAndEnd() async throws {
        try await Scratch.with { scratch in
            let source = try scratch.container("export")
            let destination = try scratch.container("import")
            try seedTransferContainer(source, bigBytes: 4096)
            let log = CapturedLog()
            var system = quickSystem
            system.logger = log.logger()
            let archive = scratch.url("a.tar.xz")
            _ = try await system.exportResources(
                of: TreeCopyMigration(), named: "copy", from: source,
                request: MigrationRequest(destinationPlatform: .current), to: archive)
            try await system.importResources(from: archive, into: destination, using: TreeCopyMigration(), named: "copy")
            let messages = log.all.map(\.message)
            #expect(messages.first == "export starting")
            #expect(
                messages.contains("export finished") && messages.contains("import starting") && messages.last == "import finished",
                "\(messages)")
            #expect(messages.contains("extracting into"), "the engine logs through the host's logger: \(messages)")
            #expect(
                log.all.filter { $0.message.hasSuffix("finished") }.allSatisfy { $0.level == .info && $0.metadata["extension"] == "copy" })
        }
    }

    /// A failed import logs the error at `error` level; the caller still gets it thrown.
    @Test func aFailedImportLogsTheError() async throws {
        try await Scratch.with { scratch in
            let source = try scratch.container("export")
            let destination = try scratch.container("import")
            try seedTransferContainer(source, bigBytes: 4096)
            let archive = scratch.url("a.tar.xz")
            _ = try await quickSystem.exportResources(
                of: TreeCopyMigration(), from: source,
                request: MigrationRequest(destinationPlatform: .current), to: archive)
            let log = CapturedLog()
            var system = quickSystem
            system.logger = log.logger(level: .info)
            var importer = TreeCopyMigration()
            importer.importFails = true
            await #expect(throws: TreeCopyMigration.Failure.self) {
                try await system.importResources(from: archive, into: destination, using: importer, named: "failing")
            }
            let failure = try #require(log.all.last)
            #expect(failure.level == .error && failure.message.hasPrefix("import failed"), "\(log.all)")
            #expect(failure.metadata["error"]?.contains("importer failed") == true, "\(failure.metadata)")
        }
    }

    /// A FIFO inside an appended folder cannot be archived: the export goes on without it and
    /// logs a `warning` naming the file, the trace a caller shows its user (`amk export` prints
    /// it); the archive holds the rest.
    @Test func whatAnExportSkipsIsLoggedAsAWarningNamingTheFile() async throws {
        try await Scratch.with { scratch in
            let source = try scratch.container("fifo")
            let documents = source.documentsDirectory.path(percentEncoded: false)
            try Data("kept".utf8).write(to: source.documentsDirectory.appending(path: "kept.txt"))
            #expect(mkfifo(documents + "/pipe", 0o644) == 0)
            let log = CapturedLog()
            var system = quickSystem
            system.logger = log.logger(level: .warning)
            let archive = scratch.url("fifo.tar.xz")
            _ = try await system.exportResources(
                of: TreeCopyMigration(), from: source,
                request: MigrationRequest(destinationPlatform: .current), to: archive)
            let warnings = log.all.filter { $0.level == .warning }
            #expect(warnings.map(\.message) == ["skipped: FIFOs are not archived"], "\(log.all)")
            #expect(warnings.first?.metadata["path"] == documents + "/pipe")
        }
    }
}
