import ArchiveTestSupport
import Foundation
import IndexedArchive
import Logging
import Synchronization
import Tar
import TestSupport
import Testing

extension EngineSuites {
    /// The engine's diagnostics go through swift-log, to the logger the caller hands it.
    @Suite struct EngineLoggingTests {
        /// A pack logs its start, each warning (with the path, escaped for a terminal) and its
        /// summary, the figures matching the returned summary.
        @Test func aPackLogsItsStartWarningsAndSummary() async throws {
            let dir = try TemporaryDirectory()
            try dir.file("app/notes.txt", "hello\n")
            let fifo = dir.path + "/app/pipe\u{1B}[2J"
            try #require(mkfifo(fifo, 0o600) == 0)
            let log = CapturedLog()
            var options = testOptions()
            options.logger = log.logger()
            let summary = try await ArchivePacker.pack(
                [PackSource(path: dir.path + "/app")], to: .file(dir.path + "/a.tar.xz"),
                options: options)
            let records = log.all
            #expect(records.first?.level == .debug && records.first?.message == "packing")
            let warnings = records.filter { $0.level == .warning }
            #expect(warnings.count == summary.warnings.count && warnings.count == 1)
            #expect(warnings.first?.metadata["path"]?.hasSuffix("pipe\\x1b[2J") == true, "\(warnings)")
            #expect(warnings.allSatisfy { !$0.message.contains("\u{1B}") && $0.metadata.values.allSatisfy { !$0.contains("\u{1B}") } })
            let done = try #require(records.last)
            #expect(done.level == .info && done.message == "packed")
            #expect(done.metadata["entries"] == "\(summary.entries)" && done.metadata["archiveBytes"] == "\(summary.archiveBytes)")
            #expect(records.filter { $0.message == "block written" }.count == summary.blocks)
        }

        /// A failing pack logs the error; the caller still gets it thrown.
        @Test func aFailedPackLogsTheError() async throws {
            let dir = try TemporaryDirectory()
            let log = CapturedLog()
            var options = testOptions()
            options.logger = log.logger(level: .info)
            await #expect(throws: ArchiveError.self) {
                try await ArchivePacker.pack([PackSource(path: dir.path + "/missing")], to: .file(dir.path + "/a.tar.xz"), options: options)
            }
            #expect(log.all.map(\.level) == [.error])
            #expect(log.all.first?.metadata["error"]?.contains("missing") == true)
        }

        /// Extraction logs where it writes, each member at trace level and each warning.
        @Test(arguments: ReadMode.allCases)
        func extractionLogsMembersAndWarnings(_ mode: ReadMode) async throws {
            let dir = try TemporaryDirectory()
            let tar = try tarStream([tarFile("ok.txt", "fine"), (TarHeader(path: "pipe", kind: .fifo), [])])
            let reader = try await hostileArchive(tar, mode: mode, at: dir.path + "/a.tar.xz")
            let log = CapturedLog()
            var options = ExtractOptions()
            options.logger = log.logger()
            let summary = try await reader.extract(to: dir.path + "/out", options: options)
            let records = log.all
            #expect(records.first?.message == "extracting into")
            #expect(records.filter { $0.message == "extracting" }.compactMap { $0.metadata["member"] } == ["ok.txt", "pipe"])
            let warnings = records.filter { $0.level == .warning }
            #expect(warnings.map { $0.metadata["member"] } == summary.warnings.map(\.member) && warnings.count == 1)
        }
    }
}
