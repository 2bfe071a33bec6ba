import ArgumentParser

/// `amk-bench`: compares the engine's pack (and, once the reader lands, its listing and
/// extraction) with tar + xz and pixz on generated or given corpora.
@main
struct AMKBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "amk-bench",
        abstract: "Benchmark amk's archiving engine against tar | xz and pixz.",
        subcommands: [BenchCommand.self, PackChildCommand.self, CancelCommand.self, TransferCommand.self],
        defaultSubcommand: BenchCommand.self
    )
}
