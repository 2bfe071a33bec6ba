import Foundation
import Testing

extension AMKTests {
    /// `amk _legacy-sweep --crash-after N`: the process kills itself with SIGKILL before the
    /// sweep's change N+1, for every N. After each kill every key's data is whole in its legacy
    /// place or its new one; a sweep after the "reboot" finishes the move.
    @Suite(.enabled(if: TransferProcess.has("_legacy-sweep"), "register LegacySweepCommand in AMK.commands"))
    @MainActor struct LegacySweepCommand {
        static let prefs = Data(#"{"theme":"dark"}"#.utf8)
        static let secret = Data("secret".utf8)

        static func plant(in tree: TestTree) throws {
            try tree.write("root/Documents/prefs.json", Array(prefs))
            try tree.write("root/Documents/token.b64", Array(secret.base64EncodedData()))
        }

        @Test func aKillAtEveryPointLosesNothing() throws {
            let tree = try TestTree()
            try Self.plant(in: tree)
            let full = try AMKProcess.run(["_legacy-sweep", "--root", tree.path("root")])
            #expect(full.status == 0, "\(full.stderr)")
            let match = try #require(full.stdout.firstMatch(of: /(\d+) changes/), "\(full.stdout)")
            let changes = try #require(Int(match.1))
            #expect(changes >= 14)
            #expect(full.stdout.contains("settings: migrated(from: \"\(tree.path("root/Documents/prefs.json"))\")"), "\(full.stdout)")

            let keys: [(old: String, new: String, oldBytes: Data, newBytes: Data)] = [
                ("Documents/prefs.json", "Library/Application Support/settings.json", Self.prefs, Self.prefs),
                ("Documents/token.b64", "Library/token", Self.secret.base64EncodedData(), Self.secret)
            ]
            for crashAfter in 0..<changes {
                let root = "run\(crashAfter)"
                try tree.write("\(root)/Documents/prefs.json", Array(Self.prefs))
                try tree.write("\(root)/Documents/token.b64", Array(Self.secret.base64EncodedData()))
                let crashed = try AMKProcess.start(
                    [
                        "_legacy-sweep", "--root", tree.path(root),
                        "--crash-after", String(crashAfter)
                    ]
                ).waitUntilExit()
                #expect(
                    crashed.terminationReason == .uncaughtSignal && crashed.status == SIGKILL,
                    "crash after \(crashAfter): exited \(crashed.status)")
                for key in keys {
                    let old = FileManager.default.contents(atPath: tree.path("\(root)/\(key.old)"))
                    let new = FileManager.default.contents(atPath: tree.path("\(root)/\(key.new)"))
                    #expect(old == key.oldBytes || new == key.newBytes, "crash after \(crashAfter): \(key.new) lost")
                    #expect(old == nil || old == key.oldBytes, "crash after \(crashAfter): \(key.old) damaged")
                    #expect(new == nil || new == key.newBytes, "crash after \(crashAfter): \(key.new) partial")
                }
                let reboot = try AMKProcess.run(["_legacy-sweep", "--root", tree.path(root)])
                #expect(reboot.status == 0, "\(reboot.stderr)")
                for key in keys {
                    #expect(FileManager.default.contents(atPath: tree.path("\(root)/\(key.new)")) == key.newBytes)
                    #expect(!tree.exists("\(root)/\(key.old)"))
                }
                let leftovers =
                    try FileManager.default.contentsOfDirectory(atPath: tree.path("\(root)/Library"))
                    + FileManager.default.contentsOfDirectory(atPath: tree.path("\(root)/Library/Application Support"))
                #expect(!leftovers.contains { $0.contains(".amk-tmp-") }, "crash after \(crashAfter): \(leftovers)")
            }
        }
    }
}
