import ArgumentParser

/// `amk`: pack, inspect and extract indexed `.tar.xz` archives, and run app migrations.
@main
struct AMK: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "amk",
        abstract: "Pack, inspect and extract indexed .tar.xz archives, and run app migrations."
    )
}
