import AppMigration
import Foundation
import IndexedArchive
import TestSupport
import Testing

/// Extension processes killed at random points (SIGKILL from a thread of their own after a random
/// delay, or a crash, trap or exit at a random item): whatever the point, nothing partial is left.
/// An export's output is absent or a complete archive that verifies; an import's container is
/// either complete (and the status success) or cleared (and the failure recorded).
///
/// Runs scale with `AMK_STRESS_RUNS` (a quarter of them, at least 8); each run follows from its
/// seed (see ``StressSettings``).
@Suite struct ExtensionProcessKillTests {
    static let testExtension = BuildProducts.path("amk-test-extension")

    static let system: MigrationSystem = {
        let policy = WatchdogPolicy(defaultStallTimeout: .seconds(5), gracePeriod: .seconds(1), checkInterval: .milliseconds(20))
        return MigrationSystem(watchdogPolicy: policy, importWatchdogPolicy: policy, compressionPreset: 0, chunkSize: 1 << 20, workers: 2)
    }()

    static let itemCount = 6

    /// The extension as run `seed` wants it: a kill after a random delay, or a failure at a random
    /// item (possibly past the last, so that some runs succeed).
    static func executable(seed: UInt64, generator: inout SeededGenerator) -> (ExtensionExecutable, String) {
        // No crash backtraces: symbolicating a debug binary takes a core for a second or more,
        // which the concurrent suites' timing bounds then pay for.
        var environment = ["AMK_TEST_ITEM_DELAY_MS": "10", "SWIFT_BACKTRACE": "enable=no"]
        let how = generator.next() % 5
        let what: String
        if how == 0 {
            let milliseconds = 20 + generator.next() % 150
            environment["AMK_TEST_KILL_AFTER_MS"] = String(milliseconds)
            what = "SIGKILL after \(milliseconds) ms"
        } else {
            let behaviour = ["kill", "segv", "trap", "exit"][Int(how - 1)]
            let after = Int(generator.next() % UInt64(itemCount + 2))
            environment["AMK_TEST_BEHAVIOUR"] = behaviour
            environment["AMK_TEST_AFTER"] = String(after)
            what = "\(behaviour) at item \(after)"
        }
        return (ExtensionExecutable(path: testExtension, environment: environment), "\(what) (\(StressSettings.replay(seed)))")
    }

    @Test func killedExtensionProcessesLeaveNothingPartial() async throws {
        let runs = max(8, StressSettings.runs / 4)
        let scratch = try TemporaryDirectory(prefix: "amk-process-kill")
        let source = MigrationDataContainer(bundleIdentifier: "com.example.kill", containerRootDirectory: scratch.url("source"))
        try source.createStandardDirectories()
        var expected: [String: Data] = [:]
        for index in 0..<Self.itemCount {
            let data = Data((0..<(1000 + index * 37)).map { UInt8(truncatingIfNeeded: $0 &* (index + 3)) })
            try data.write(to: source.documentsDirectory.appending(path: "item\(index)"))
            expected["item\(index)"] = data
        }
        let good = scratch.url("good.tar.xz")
        try await Self.system.exportResources(
            of: ExtensionExecutable(path: Self.testExtension), from: source, request: MigrationRequest(destinationPlatform: .current),
            to: good)

        for run in 0..<runs {
            let seed = StressSettings.seed(forRun: run)
            var generator = SeededGenerator(seed: seed)
            // Export.
            let (exporter, exportWhat) = Self.executable(seed: seed, generator: &generator)
            let archive = scratch.url("run\(run).tar.xz")
            do {
                try await Self.system.exportResources(
                    of: exporter, from: source, request: MigrationRequest(destinationPlatform: .current), to: archive)
                let reader = try await ArchiveReader.open(path: archive.path(percentEncoded: false))
                try await reader.verify()
                #expect(try await reader.entries().count == Self.itemCount, "\(exportWhat)")
            } catch let error as AppMigrationError {
                #expect(!FileManager.default.fileExists(atPath: archive.path(percentEncoded: false)), "\(exportWhat): \(error)")
            }
            // Import.
            let (importer, importWhat) = Self.executable(seed: seed &+ 0x1000, generator: &generator)
            let destination = MigrationDataContainer(
                bundleIdentifier: "com.example.kill", containerRootDirectory: scratch.url("destination\(run)"))
            try destination.createStandardDirectories()
            try Data("before".utf8).write(to: destination.documentsDirectory.appending(path: "before"))
            let names = {
                (try? FileManager.default.contentsOfDirectory(atPath: destination.documentsDirectory.path(percentEncoded: false))) ?? []
            }
            do {
                try await Self.system.importResources(from: good, into: destination, using: importer)
                for (name, data) in expected {
                    #expect(try Data(contentsOf: destination.documentsDirectory.appending(path: name)) == data, "\(importWhat)")
                }
                let status = MigrationDataContainer.withCurrent(destination) { MigrationStatus.importStatus }
                guard case .success? = status else {
                    Issue.record("\(importWhat): no success recorded")
                    continue
                }
            } catch let error as AppMigrationError {
                #expect(names().isEmpty, "\(importWhat): \(error): left \(names())")
                let status = MigrationDataContainer.withCurrent(destination) { MigrationStatus.importStatus }
                guard case .failure? = status else {
                    Issue.record("\(importWhat): no failure recorded after \(error)")
                    continue
                }
            }
            // Nothing of the extension's group is left running to change things later.
            let before = names()
            try await Task.sleep(for: .milliseconds(50))
            #expect(names() == before, "\(importWhat)")
        }
    }
}
