import Foundation
import Testing

@testable import AppMigration

extension AMKTests {
    /// `amk receive`: what a sender sees when the receiver goes away.
    @Suite(
        .enabled(
            if: TransferProcess.has("send") && TransferProcess.has("receive"),
            "register SendCommand and ReceiveCommand in AMK.commands"))
    @MainActor struct ReceiveCommand {
        /// Sends the container `src` in `tree` to a receiver started on `dst` (1 MiB chunks, preset
        /// 0); returns what each side ended with.
        static func sendToNewReceiver(in tree: TestTree, adopting: Bool = false) throws -> (
            sent: AMKProcess.Result, received: AMKProcess.Result
        ) {
            let receiver = try TransferProcess.startReceiver(container: tree.path("dst"), extra: adopting ? ["--adopt-container"] : [])
            let sent = try AMKProcess.run(
                [
                    "send", "--container", tree.path("src"), "--to", receiver.endpoint, "--code", receiver.code,
                    "--chunk-size", "1MiB", "--preset", "0"
                ])
            return (sent, try AMKProcess.collect(receiver.process))
        }

        /// The receiver is killed with SIGKILL mid-stream: the sender reports the lost connection,
        /// and the destination keeps nothing; the next import removes the dead receiver's staging.
        @Test func aReceiverKilledMidStreamFailsTheSender() throws {
            let tree = try TestTree()
            let random = try FileHandle(forReadingFrom: URL(fileURLWithPath: "/dev/urandom"))
            try tree.write("src/Documents/big.bin", Array(random.readData(ofLength: 32 << 20)))
            try random.close()
            try tree.write("src/Documents/small.txt", "small\n")
            let receiver = try TransferProcess.startReceiver(container: tree.path("dst"))
            let sender = try AMKProcess.start(
                [
                    "send", "--container", tree.path("src"), "--to", receiver.endpoint, "--code", receiver.code, "--chunk-size", "1MiB",
                    "--preset", "0"
                ])
            let streaming = TransferProcess.waitUntil(seconds: 30) { TransferProcess.stagedBytes(in: tree.path("dst")) > 2 << 20 }
            kill(receiver.process.processIdentifier, SIGKILL)
            let killed = try receiver.process.waitUntilExit()
            #expect(streaming, "the receiver never staged 2 MiB")
            #expect(killed.terminationReason == .uncaughtSignal, "the receiver finished before it could be killed")
            let sent = try AMKProcess.collect(sender)
            #expect(sent.status == 1)
            #expect(
                sent.stderr.hasPrefix("amk: the connection to the receiver at \(receiver.endpoint) was lost")
                    || sent.stderr.hasPrefix("amk: the receiver at \(receiver.endpoint) closed the connection"), "\(sent.stderr)")
            #expect(TransferProcess.files(under: tree.path("dst")).isEmpty)

            // A new receiver cleans up after the dead one, then imports.
            let second = try TransferProcess.startReceiver(container: tree.path("dst"))
            let again = try AMKProcess.run(
                [
                    "send", "--container", tree.path("src"), "--to", second.endpoint, "--code", second.code,
                    "--chunk-size", "1MiB", "--preset", "0"
                ])
            try second.process.waitUntilExit()
            #expect(again.status == 0, "\(again.stderr)")
            #expect(TransferProcess.stagedBytes(in: tree.path("dst")) == 0)
            #expect(TransferProcess.files(under: tree.path("dst")) == TransferProcess.files(under: tree.path("src")))
        }

        /// A sender whose `Documents` is a link to a folder outside its container sends the link;
        /// the receiver refuses it (exit 1, the member named), tells the sender, and moves
        /// nothing: the outside folder keeps its files and the container stays as it was.
        @Test func aLinkedDocumentsFolderFailsBothSidesAndTouchesNothing() throws {
            let tree = try TestTree()
            try tree.write("outside/secret.txt", "private to another app\n")
            try tree.write("outside/nested/deeper.txt", "nested secret\n")
            try tree.mkdir("src")
            try tree.symlink("src/Documents", to: tree.path("outside"))
            try tree.write("src/Library/Preferences/settings.json", #"{"theme":"dark"}"#)
            try tree.write("dst/Documents/keep.txt", "mine\n")
            try tree.mkdir("dst/Library/Application Support")
            try tree.mkdir("dst/tmp")
            let outsideBefore = TransferProcess.items(under: tree.path("outside"))
            let before = TransferProcess.items(under: tree.path("dst"))
            let (sent, received) = try Self.sendToNewReceiver(in: tree, adopting: true)
            #expect(received.status == 1, "\(received.stdout)\(received.stderr)")
            #expect(received.stderr.contains("'Documents'"), "\(received.stderr)")
            #expect(sent.status == 1, "\(sent.stdout)\(sent.stderr)")
            #expect(sent.stderr.contains("failed to import") && sent.stderr.contains("'Documents'"), "\(sent.stderr)")
            #expect(TransferProcess.items(under: tree.path("outside")) == outsideBefore)
            let after = TransferProcess.items(under: tree.path("dst")).filter { !$0.key.hasPrefix(".amk") }
            #expect(after == before, "\(after.keys.sorted())")
            #expect(TransferProcess.recordedOutcome(in: tree.path("dst")) == "failure")
            #expect(TransferProcess.recordedMessage(in: tree.path("dst"))?.contains("'Documents'") == true)
        }

        /// `Documents` sent as a link that stays inside the archive (to `Library/stash`) passes
        /// the host; the `files` extension still does not follow it, and says so.
        @Test func aDocumentsLinkInsideTheArchiveIsRefusedByTheExtension() throws {
            let tree = try TestTree()
            try tree.write("src/Library/stash/x.txt", "x\n")
            try tree.symlink("src/Documents", to: "Library/stash")
            let (sent, received) = try Self.sendToNewReceiver(in: tree)
            #expect(received.status == 1, "\(received.stdout)\(received.stderr)")
            #expect(received.stderr.contains("'Documents'"), "\(received.stderr)")
            #expect(sent.status == 1, "\(sent.stderr)")
            #expect(!tree.exists("dst/Documents/x.txt"))
            #expect(TransferProcess.recordedOutcome(in: tree.path("dst")) == "failure")
        }

        /// A receive holds its container from before it listens: a second receive, or an import,
        /// into the same container is refused at once, before it shows a code a sender would pair
        /// with; the first goes on and imports.
        @Test func aSecondReceiveOrAnImportIntoTheSameContainerIsRefusedBeforeItListens() throws {
            let tree = try TestTree()
            try tree.write("src/Documents/a.txt", "hello\n")
            let first = try TransferProcess.startReceiver(container: tree.path("dst"))
            let second = try AMKProcess.run(
                ["receive", "--listen", "127.0.0.1:0", "--container", tree.path("dst"), "--accept-timeout", "5"])
            #expect(second.status == 1)
            #expect(second.stdout.isEmpty, "it listened: \(second.stdout)")
            #expect(second.stderr.contains("another migration is running in this container"), "\(second.stderr)")
            let exported = try AMKProcess.run(["export", "--container", tree.path("src"), "-o", tree.path("a.tar.xz")])
            #expect(exported.status == 0, "\(exported.stderr)")
            let imported = try AMKProcess.run(["import", tree.path("a.tar.xz"), "--container", tree.path("dst")])
            #expect(imported.status == 1)
            #expect(imported.stderr.contains("another migration is running in this container"), "\(imported.stderr)")
            let sent = try AMKProcess.run(
                ["send", "--container", tree.path("src"), "--to", first.endpoint, "--code", first.code, "--preset", "0"])
            let received = try AMKProcess.collect(first.process)
            #expect(sent.status == 0, "\(sent.stderr)")
            #expect(received.status == 0, "\(received.stderr)")
            #expect(TransferProcess.files(under: tree.path("dst")) == ["Documents/a.txt": Data("hello\n".utf8)])
        }

        /// A container that cannot be created (its volume is read-only, here a path under a
        /// file) is refused before listening, with the folder and the system's reason, not a dump
        /// of Foundation's error.
        @Test func aContainerThatCannotBeCreatedIsRefusedBeforeListening() throws {
            let tree = try TestTree()
            try tree.write("file", "not a folder\n")
            let result = try AMKProcess.run(
                ["receive", "--listen", "127.0.0.1:0", "--container", tree.path("file/dst"), "--accept-timeout", "5"])
            #expect(result.status == 1)
            #expect(result.stdout.isEmpty, "it listened: \(result.stdout)")
            #expect(result.stderr == "amk: \(tree.path("file")): mkdir failed: Not a directory\n", "\(result.stderr)")
        }

        @Test func noSenderWithinTheAcceptTimeoutIsAFailure() throws {
            let tree = try TestTree()
            let result = try AMKProcess.run(
                [
                    "receive", "--listen", "127.0.0.1:0", "--container", tree.path("dst"),
                    "--accept-timeout", "1"
                ])
            #expect(result.status == 1)
            #expect(result.stderr.contains("no sender with the pairing code connected"), "\(result.stderr)")
        }

        /// Standard output that cannot take the pairing code (a full disk) fails at once: no
        /// sender could learn the code, and the receiver waited for one, silently, for good.
        @Test(.enabled(if: FileManager.default.fileExists(atPath: "/dev/full"), "needs /dev/full"))
        func aPairingCodeThatCannotBeWrittenIsAFailure() throws {
            let tree = try TestTree()
            let start = Date()
            let result = try ShellPipeline.run(
                #""$AMK" receive --listen 127.0.0.1:0 --container dst --accept-timeout 30 > /dev/full"#, in: tree.url("."))
            #expect(result.status == 1, "\(result.stderr)")
            #expect(
                result.stderr == "amk: standard output: write failed: No space left on device\n", "\(result.stderr)")
            #expect(Date().timeIntervalSince(start) < 15)
        }

        /// --accept-timeout takes fractions of a second, like every transfer timeout.
        @Test func anAcceptTimeoutMayBeAFractionOfASecond() throws {
            let tree = try TestTree()
            let start = Date()
            let result = try AMKProcess.run(
                [
                    "receive", "--listen", "127.0.0.1:0", "--container", tree.path("dst"),
                    "--accept-timeout", "0.5"
                ])
            #expect(result.status == 1, "\(result.stderr)")
            #expect(
                result.stderr.contains(/no sender with the pairing code connected to 127\.0\.0\.1:\d+ within 0\.5 s/),
                "\(result.stderr)")
            #expect(Date().timeIntervalSince(start) < 15)
            for (flag, value) in [("--accept-timeout", "0"), ("--idle-timeout", "-2"), ("--idle-timeout", "nan")] {
                // Joined by `=` and as two arguments: "-2" alone once read as a flag, and the
                // message said the value was missing.
                for spelled in [["\(flag)=\(value)"], [flag, value]] {
                    let invalid = try AMKProcess.run(["receive", "--listen", "127.0.0.1:0", "--container", tree.path("dst")] + spelled)
                    #expect(invalid.status == 2, "\(spelled): \(invalid.stderr)")
                    #expect(invalid.stderr.contains("\(flag) must be a positive number of seconds"), "\(spelled): \(invalid.stderr)")
                }
            }
            let tiny = try AMKProcess.run(
                ["receive", "--listen", "127.0.0.1:0", "--container", tree.path("dst"), "--accept-timeout", "1e-12"])
            #expect(tiny.status == 2, "\(tiny.stderr)")
            #expect(tiny.stderr.contains("--accept-timeout must be at least 0.001 seconds"), "\(tiny.stderr)")
        }

        /// A sender that trickles the start of a real archive, one byte every 200 ms: each byte
        /// would reset a plain socket timeout, but `amk receive --idle-timeout 1` cuts it off after
        /// about a second, says the sender was idle, tells it so, and leaves the container as it
        /// was with a failed import recorded.
        @Test(.timeLimit(.minutes(1))) func aTricklingSenderIsCutOffAfterTheIdleTimeout() throws {
            let tree = try TestTree()
            try tree.write("data/big.bin", TestTree.noise(count: 200_000, seed: 9))
            let archive = tree.path("real.tar.xz")
            let pack = try AMKProcess.run(["pack", tree.path("data"), "-o", archive, "--chunk-size", "1M"])
            #expect(pack.status == 0, "\(pack.stderr)")
            let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: archive)).prefix(150))
            try tree.write("dst/Documents/kept.txt", "kept\n")
            let receiver = try TransferProcess.startReceiver(
                container: tree.path("dst"),
                extra: ["--idle-timeout", "1", "--adopt-container"])
            let sender = try TricklingSender(to: receiver.endpoint, code: receiver.code, bytes: bytes, every: .milliseconds(200))
            try receiver.process.waitUntilExit()
            let ended = Date()
            let received = try AMKProcess.collect(receiver.process)
            #expect(received.status == 1)
            #expect(received.stderr.hasPrefix("amk: the sender was idle for 1 s ("), "\(received.stderr)")
            let start = try #require(sender.trickleStart)
            #expect(ended.timeIntervalSince(start) >= 0.9 && ended.timeIntervalSince(start) < 15, "\(ended.timeIntervalSince(start)) s")
            #expect(sender.sent >= 3, "the sender kept sending while it was cut off")
            #expect(TransferProcess.waitUntil(seconds: 10) { sender.status != nil })
            #expect(sender.status == .statusFailed, "the sender is told of the failure, in an authentic record")
            #expect(TransferProcess.files(under: tree.path("dst")) == ["Documents/kept.txt": Data("kept\n".utf8)])
            #expect(TransferProcess.stagedBytes(in: tree.path("dst")) == 0)
            #expect(TransferProcess.recordedOutcome(in: tree.path("dst")) == "failure")
        }

        /// `--extension` is one type in export, import, send and receive: the same names are
        /// accepted and refused everywhere, and the same usage error lists them.
        @Test(arguments: ["export", "import", "send", "receive"])
        func theExtensionsAreTheSameEverywhere(command: String) throws {
            let tree = try TestTree()
            let rest: [String] =
                switch command {
                case "export": ["--container", tree.path("src"), "-o", tree.path("a.tar.xz")]
                case "import": [tree.path("a.tar.xz"), "--container", tree.path("dst")]
                case "send": ["--container", tree.path("src"), "--to", "127.0.0.1:9", "--code", "0000-0000-0000-0000"]
                default: ["--listen", "127.0.0.1:0", "--container", tree.path("dst")]
                }
            let result = try AMKProcess.run([command] + rest + ["--extension", "nope"])
            #expect(result.status == 2)
            #expect(
                result.stderr.contains("Please provide one of 'sample', 'sample-stored', 'documents' or 'files'"),
                "\(command): \(result.stderr)")
        }

        /// An extension of export and import (`sample`) runs over a transfer too, and `files`
        /// exports to an archive that `files` imports.
        @Test func anyExtensionRunsOverEveryPath() throws {
            let tree = try TestTree()
            try tree.write("src/Documents/a.txt", "alpha\n")
            try tree.write("src/Library/Application Support/state.json", "{}\n")
            let receiver = try TransferProcess.startReceiver(
                container: tree.path("dst"),
                extra: ["--extension", "sample"])
            let sent = try AMKProcess.run(
                [
                    "send", "--container", tree.path("src"), "--to", receiver.endpoint, "--code", receiver.code,
                    "--extension", "sample", "--preset", "0"
                ])
            try receiver.process.waitUntilExit()
            #expect(sent.status == 0, "\(sent.stderr)")
            #expect(TransferProcess.files(under: tree.path("dst"))["Documents/a.txt"] == Data("alpha\n".utf8))
            let exported = try AMKProcess.run(
                [
                    "export", "--container", tree.path("src"), "--extension", "files",
                    "-o", tree.path("f.tar.xz")
                ])
            #expect(exported.status == 0, "\(exported.stderr)")
            let imported = try AMKProcess.run(
                ["import", tree.path("f.tar.xz"), "--container", tree.path("dst2"), "--extension", "files"])
            #expect(imported.status == 0, "\(imported.stderr)")
            #expect(TransferProcess.files(under: tree.path("dst2")) == TransferProcess.files(under: tree.path("src")))
        }
    }
}
