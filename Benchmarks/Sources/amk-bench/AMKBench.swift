import ArgumentParser

/// `amk-bench`: compares the engine's pack, listing and extraction (through the release `amk`)
/// with tar + xz and pixz on generated or given corpora, and measures cancellation and the
/// paired transfer's cost.
@main
struct AMKBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "amk-bench",
        abstract: "Benchmark amk's archiving engine against tar | xz and pixz.",
        subcommands: [BenchCommand.self, PackChildCommand.self, CancelCommand.self, TransferCommand.self, ExtensionsCommand.self],
        defaultSubcommand: BenchCommand.self
    )
}
