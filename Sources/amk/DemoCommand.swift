import AppMigration
import ArgumentParser
import Foundation

/// `amk demo`: a whole migration in a few seconds, on a made-up but realistic app container.
///
/// It builds an app's container in a temporary folder from the benchmark's appdata corpus
/// (SQLite-like databases, cached JSON responses, property lists, photos and videos that do not
/// compress; see ``DemoContainer``), exports it through the `sample` extension, imports the
/// archive into a fresh container, then walks both trees and checks that every file's bytes and
/// mode, every link and every folder came through.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Migrate a generated sample app container end to end and check every byte.",
        discussion: """
            Builds a sample container in a temporary folder, exports it through the `sample` \
            extension, imports it into a fresh container and compares the two trees. Build in \
            release mode for representative speeds: `swift run -c release amk demo`.

            Examples:
              amk demo
              swift run -c release amk demo
            """
    )

    @Option(help: ArgumentHelp("Size of the sample container in MiB.", valueName: "n"))
    var sizeMib: Int = 64

    /// Preset 0 rather than the engine's 6: on this data it costs under a tenth in size (the media does
    /// not compress at any preset) and saves five sixths of the compression time, and a first
    /// command should be quick. `--preset 6` shows the default trade-off.
    @Option(help: "LZMA preset for the export, 0 (fastest) to 9 (smallest); `amk export` defaults to 6.")
    var preset: Int = 0

    @Flag(help: "Keep the temporary folder (containers and archive) and print its path.")
    var keep = false

    func validate() throws {
        guard (1...16_384).contains(sizeMib) else { throw ValidationError("--size-mib must be 1 to 16384, not \(sizeMib).") }
        guard (0...9).contains(preset) else { throw ValidationError("--preset must be 0 to 9, not \(preset).") }
    }

    func run() async throws {
        let work = FileManager.default.temporaryDirectory.appending(
            path: "amk-demo-\(UUID().uuidString.prefix(8))",
            directoryHint: .isDirectory)
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        let keep = self.keep
        defer {
            if keep {
                print("kept \(work.path(percentEncoded: false))")
            } else {
                try? FileManager.default.removeItem(at: work)
            }
        }
        let bytes = sizeMib << 20
        let preset = self.preset
        let report = try await SignalCancellation.run {
            try await DemoRun(work: work, targetBytes: bytes, preset: preset).run()
        }
        print(report)
    }
}
