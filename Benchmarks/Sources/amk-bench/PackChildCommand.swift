import ArgumentParser
import Foundation
import IndexedArchive

/// `amk-bench _pack`: our pack, run as a child of the benchmark so that it is measured exactly as
/// the peers are (wall time, CPU and peak RSS from `wait4`), with a fresh heap and page tables,
/// and nothing of the parent's (the corpus list, earlier runs) in its resident set.
struct PackChildCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "_pack",
        abstract: "Pack one directory with the engine and print a JSON summary (used by the benchmark).",
        shouldDisplay: false
    )

    @Option(help: "The directory to pack.")
    var source: String

    @Option(help: "Its path inside the archive.")
    var archivePath: String

    @Option(help: "The archive to write.")
    var output: String

    @Option(help: "LZMA preset, 0-9.")
    var preset: Int = 6

    @Option(help: "Compressing threads.")
    var workers: Int = PackOptions.activeCores

    @Option(help: "Uncompressed bytes per xz block.")
    var chunkSize: Int = PackOptions().chunkSize

    @Option(help: "The match finder's nice length; amk's default for the preset when absent.")
    var niceLength: Int?

    func run() async throws {
        // As amk does: what is measured is the engine under the CLI's allocator setting.
        AllocatorTuning.apply()
        var options = PackOptions()
        options.preset = preset
        options.workers = workers
        options.chunkSize = chunkSize
        options.niceLength = niceLength
        let summary = try await ArchivePacker.pack([PackSource(path: source, archivePath: archivePath)],
                                                   to: .file(output), options: options)
        let data = try JSONEncoder().encode(PackResult(summary))
        FileHandle.standardOutput.write(data)
    }
}
