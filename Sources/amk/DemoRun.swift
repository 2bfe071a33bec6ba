import AppMigration
import Foundation
import IndexedArchive

/// One demo: the phases, timed.
struct DemoRun: Sendable {
    let work: URL
    let targetBytes: Int
    let preset: Int

    func run() async throws -> String {
        let source = MigrationDataContainer(
            bundleIdentifier: "com.example.notes",
            containerRootDirectory: work.appending(path: "source-device/com.example.notes"))
        let destination = MigrationDataContainer(
            bundleIdentifier: "com.example.notes",
            containerRootDirectory: work.appending(path: "destination-device/com.example.notes"))
        let archive = work.appending(path: "com.example.notes.tar.xz")

        var clock = ContinuousClock.now
        func lap() -> Double {
            let now = ContinuousClock.now
            defer { clock = now }
            return (now - clock) / .seconds(1)
        }

        // Writing and comparing the containers are seconds of blocking file I/O: they run on a
        // thread of their own, not on one of the cooperative pool's.
        let thread = WorkerThreadPool(threads: 1, name: "amk-demo")
        defer { thread.shutdown() }
        let targetBytes = targetBytes
        try source.createStandardDirectories()
        let made = try await thread.run { _ in try DemoContainer.generate(in: source, targetBytes: targetBytes) }
        let generateSeconds = lap()

        let system = MigrationSystem(compressionPreset: preset)
        let sample = try SampleExtension.sample.executable()
        let properties = try await system.exportResources(
            of: sample, named: SampleExtension.sample.rawValue, from: source,
            request: MigrationRequest(destinationPlatform: .iOS), to: archive)
        let exportSeconds = lap()
        let archiveBytes = (try FileManager.default.attributesOfItem(atPath: archive.path(percentEncoded: false))[.size] as? Int) ?? 0

        try destination.createStandardDirectories()
        try await system.importResources(from: archive, into: destination, using: sample, named: SampleExtension.sample.rawValue)
        let importSeconds = lap()

        let compared = try await thread.run { cancellation in
            try DemoComparison.compare(source, destination, cancellation: cancellation)
        }
        let verifySeconds = lap()

        let tar = Double(properties.uncompressedBytes)
        func rate(_ seconds: Double) -> String { ByteSize.formatRate(seconds > 0 ? Double(made.bytes) / seconds : 0) }
        func column(_ text: String, _ width: Int) -> String { text.padding(toLength: max(width, text.count), withPad: " ", startingAt: 0) }
        let ratio = String(format: "%.1f%%", tar > 0 ? Double(archiveBytes) / tar * 100 : 0)
        let total = generateSeconds + exportSeconds + importSeconds + verifySeconds
        var lines: [String] = []
        lines.append("amk demo: the container of a made-up app, migrated through the \"sample\" extension, in a process of its own")
        lines.append(
            "  container  \(made.files) files, \(made.links) link, \(made.folders) folders, \(ByteSize.format(UInt64(made.bytes))): "
                + made.kinds.map { "\($0.name) \(ByteSize.format(UInt64($0.bytes)))" }.joined(separator: ", "))
        lines.append("  " + column("generate", 10) + column(ByteSize.formatSeconds(generateSeconds), 9) + rate(generateSeconds))
        lines.append(
            "  " + column("export", 10) + column(ByteSize.formatSeconds(exportSeconds), 9) + column(rate(exportSeconds), 13)
                + "\(ByteSize.format(UInt64(properties.uncompressedBytes))) -> \(ByteSize.format(UInt64(archiveBytes))) (\(ratio)), preset \(preset)"
        )
        lines.append(
            "  " + column("import", 10) + column(ByteSize.formatSeconds(importSeconds), 9) + column(rate(importSeconds), 13)
                + "free-space check, safe extraction to staging, extension moves the files into place")
        lines.append(
            "  " + column("verify", 10) + column(ByteSize.formatSeconds(verifySeconds), 9) + column(rate(verifySeconds), 13)
                + "every byte and mode matches: \(compared.files) files, \(compared.links) link, \(compared.folders) folders")
        lines.append("  " + column("total", 10) + ByteSize.formatSeconds(total))
        return lines.joined(separator: "\n")
    }
}
