import AppMigration
import ArgumentParser
import Foundation
import IndexedArchive

/// `amk export --container DIR --extension NAME -o A.tar.xz`: runs a migration extension's export
/// as the system would, under the watchdog, into an indexed archive.
struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export an app container through a migration extension into an archive.",
        discussion: """
            The container is an app's data folder (Documents, Library/Application Support, ...). \
            The extension runs in a process of its own (the built-in ones as processes of \
            amk-sample-extensions, yours with --extension-executable) under the watchdog: one that \
            goes silent for --stall-timeout is cancelled, and one that does not stop is killed with \
            its process group. The archive records the \
            extension's version, its size estimate and the source app; nothing is left at the \
            output path if the export fails. Extensions: \(SampleExtension.helpText).

            Examples:
              amk export --container phone/com.example.notes -o notes.tar.xz
              amk export --container phone/com.example.notes --extension sample-stored -o notes.tar.xz
            """
    )

    @Option(help: ArgumentHelp("The app container to export from.", valueName: "dir"), completion: .directory)
    var container: String

    @OptionGroup var extensionChoice: ExtensionChoice

    @Option(
        name: [.customShort("o"), .long],
        help: ArgumentHelp(
            "The archive to write (replaced if it exists).",
            valueName: "archive"))
    var output: String

    @Option(help: "The app's bundle identifier, recorded as the source app (default: the container folder's name).")
    var bundleIdentifier: String?

    @Option(help: ArgumentHelp("The platform that will import the data (android, iOS, or any name).", valueName: "platform"))
    var destination: String = MigrationPlatform.iOS.rawValue

    @Option(help: "LZMA preset, 0 (fastest) to 9 (smallest).")
    var preset: Int = 6

    @Option(help: ArgumentHelp("Seconds the extension may go without progress before it is cancelled.", valueName: "seconds"))
    var stallTimeout: Double = 60

    @Flag(inversion: .prefixedNo, help: "Show a progress bar on standard error (default: only when it is a terminal).")
    var progress: Bool?

    @Flag(name: [.short, .long], help: "Log the host's and the engine's diagnostics (swift-log, debug level) on standard error.")
    var verbose = false

    func validate() throws {
        guard !output.isEmpty else { throw ValidationError("The output path (-o) is empty.") }
        // `-` is standard output everywhere else in amk; here it made a file named `-`.
        guard output != "-" else {
            throw ValidationError(
                "export writes its archive to a file, not to standard output (-o -): name a file (./- for one named '-'), or stream it with amk send."
            )
        }
        guard (0...9).contains(preset) else { throw ValidationError("--preset must be 0 to 9, not \(preset).") }
        try TransferTimeout.validate(stallTimeout, flag: "--stall-timeout")
        try ContainerOptions.requireFolder(container)
    }

    func run() async throws {
        let root = URL(filePath: container)
        let appContainer = MigrationDataContainer(
            bundleIdentifier: bundleIdentifier ?? root.lastPathComponent,
            containerRootDirectory: root)
        var system = MigrationSystem(
            watchdogPolicy: WatchdogPolicy(defaultStallTimeout: TransferTimeout.duration(stallTimeout)),
            compressionPreset: preset)
        // Printed once the bar is gone, whether the export ends well or not.
        let warnings = ExportWarnings()
        defer { warnings.print() }
        system.logger = warnings.logger("amk.export", verbose: verbose)
        let configured = system
        let archive = URL(filePath: output)
        let sharesStandardOutput = StandardOutput.isTheSameFile(as: output)
        let chosen = try extensionChoice.resolve(default: .sample)
        let platform = MigrationPlatform(destination)
        let start = ContinuousClock.now
        // Units of 0: the host counts the export's bytes against the extension's size estimate.
        let shown = Progress(totalUnitCount: 0)
        let properties = try await ProgressMonitor.run(
            shown, label: "exporting", show: progress ?? StandardError.isTerminal,
            unit: .bytes
        ) {
            try await SignalCancellation.run {
                try await configured.exportResources(
                    of: chosen.executable, named: chosen.name, from: appContainer,
                    request: MigrationRequest(destinationPlatform: platform), to: archive, progress: shown)
            }
        }
        let seconds = (ContinuousClock.now - start) / .seconds(1)
        let summary = Self.describe(properties, extensionName: chosen.name, seconds: seconds)
        // Never on standard output when the archive is there (`-o /dev/stdout`).
        if sharesStandardOutput { StandardError.line(summary) } else { print(summary) }
    }

    /// `exported with sample: 64.3 MiB -> 33.1 MiB (51.5%) in 4.12 s, 15.6 MiB/s; version 1.0, estimate 64.0 MiB`.
    static func describe(_ properties: DeviceToDeviceExportProperties, extensionName: String, seconds: Double) -> String {
        let tar = UInt64(properties.uncompressedBytes)
        let size: String
        if let compressed = properties.compressedBytes {
            let percent = String(format: "%.1f%%", tar == 0 ? 0 : Double(compressed) / Double(tar) * 100)
            size = "\(ByteSize.format(tar)) -> \(ByteSize.format(UInt64(compressed))) (\(percent))"
        } else {
            size = "\(ByteSize.format(tar)) stored uncompressed"
        }
        let rate = seconds > 0 ? Double(tar) / seconds : 0
        return "exported with \(extensionName): \(size) in \(ByteSize.formatSeconds(seconds)), \(ByteSize.formatRate(rate)); "
            + "version \(TerminalSafe.name(properties.version)), estimate \(ByteSize.format(UInt64(max(0, properties.sizeEstimate))))"
    }
}
