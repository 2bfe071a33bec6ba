import AppMigration
import ArgumentParser
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `amk _legacy-sweep` (hidden, for crash tests): runs a ``LegacyLocationMigrator`` sweep over a
/// fixed set of keys under `--root`, and with `--crash-after N` kills itself with SIGKILL before
/// the sweep's (N+1)th change to the disk, the closest a test can get to pulling the plug.
///
/// The keys: `settings` at `Library/Application Support/settings.json`, formerly
/// `Documents/prefs.json` or `Documents/settings.plist`; `token` at `Library/token`, formerly
/// `Documents/token.b64` (base64, decoded on the way).
struct LegacySweepCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "_legacy-sweep",
        abstract: "Sweep legacy locations under a folder, optionally killing itself mid-way (for tests).",
        shouldDisplay: false
    )

    @Option(help: "The folder the keys live under.")
    var root: String

    @Option(help: "Send SIGKILL to this process before the sweep's change number N+1.")
    var crashAfter: Int?

    func run() async throws {
        let base = URL(filePath: root, directoryHint: .isDirectory)
        var migrator = LegacyLocationMigrator()
        migrator.register(
            "settings", at: base.appending(path: "Library/Application Support/settings.json"),
            legacy: [
                LegacyLocation(base.appending(path: "Documents/prefs.json")),
                LegacyLocation(base.appending(path: "Documents/settings.plist"))
            ])
        migrator.register(
            "token", at: base.appending(path: "Library/token"),
            legacy: [
                LegacyLocation(base.appending(path: "Documents/token.b64")) { data in
                    guard let decoded = Data(base64Encoded: data) else { throw CocoaError(.fileReadCorruptFile) }
                    return decoded
                }
            ])
        let counter = ChangeCounter()
        let crashAfter = self.crashAfter
        migrator.probe = DurabilityProbe { _ in
            if counter.next() > crashAfter ?? .max { kill(getpid(), SIGKILL) }
        }
        let outcomes = try migrator.sweep()
        for name in outcomes.keys.sorted() {
            print("\(name): \(outcomes[name].map { String(describing: $0) } ?? "?")")
        }
        print("\(counter.count) changes")
    }
}
