import Foundation
import Testing

extension AMKTests {
    /// `amk receive`: what a sender sees when the receiver goes away.
    @Suite(.enabled(if: TransferProcess.has("send") && TransferProcess.has("receive"),
                    "register SendCommand and ReceiveCommand in AMK.commands"))
    @MainActor struct ReceiveCommand {
        /// The receiver is killed with SIGKILL mid-stream: the sender reports the lost connection,
        /// and the destination keeps nothing; the next import removes the dead receiver's staging.
        @Test func aReceiverKilledMidStreamFailsTheSender() throws {
            let tree = try TestTree()
            let random = try FileHandle(forReadingFrom: URL(fileURLWithPath: "/dev/urandom"))
            try tree.write("src/Documents/big.bin", Array(random.readData(ofLength: 32 << 20)))
            try random.close()
            try tree.write("src/Documents/small.txt", "small\n")
            let receiver = try TransferProcess.startReceiver(container: tree.path("dst"), scratch: tree.root)
            let (sender, senderOut, senderErr) = try AMKProcess.start(
                ["send", "--container", tree.path("src"), "--to", receiver.endpoint, "--chunk-size", "1MiB", "--preset", "0"],
                scratch: tree.root)
            let streaming = TransferProcess.waitUntil(seconds: 30) { TransferProcess.stagedBytes(in: tree.path("dst")) > 2 << 20 }
            kill(receiver.process.processIdentifier, SIGKILL)
            receiver.process.waitUntilExit()
            #expect(streaming, "the receiver never staged 2 MiB")
            #expect(receiver.process.terminationReason == .uncaughtSignal, "the receiver finished before it could be killed")
            sender.waitUntilExit()
            let sent = try AMKProcess.collect(sender, stdout: senderOut, stderr: senderErr)
            #expect(sent.status == 1)
            #expect(sent.stderr.hasPrefix("amk: the connection to the receiver at \(receiver.endpoint) was lost")
                        || sent.stderr.hasPrefix("amk: the receiver at \(receiver.endpoint) closed the connection"), "\(sent.stderr)")
            #expect(TransferProcess.files(under: tree.path("dst")).isEmpty)

            // A new receiver cleans up after the dead one, then imports.
            let second = try TransferProcess.startReceiver(container: tree.path("dst"), scratch: tree.root)
            let again = try AMKProcess.run(["send", "--container", tree.path("src"), "--to", second.endpoint,
                                            "--chunk-size", "1MiB", "--preset", "0"], scratch: tree.root)
            second.process.waitUntilExit()
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
            let receiver = try TransferProcess.startReceiver(container: tree.path("dst"), scratch: tree.root)
            let sent = try AMKProcess.run(["send", "--container", tree.path("src"), "--to", receiver.endpoint,
                                           "--chunk-size", "1MiB", "--preset", "0"], scratch: tree.root)
            receiver.process.waitUntilExit()
            let received = try AMKProcess.collect(receiver.process, stdout: receiver.stdout, stderr: receiver.stderr)
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
            let receiver = try TransferProcess.startReceiver(container: tree.path("dst"), scratch: tree.root)
            let sent = try AMKProcess.run(["send", "--container", tree.path("src"), "--to", receiver.endpoint,
                                           "--chunk-size", "1MiB", "--preset", "0"], scratch: tree.root)
            receiver.process.waitUntilExit()
            let received = try AMKProcess.collect(receiver.process, stdout: receiver.stdout, stderr: receiver.stderr)
            #expect(received.status == 1, "\(received.stdout)\(received.stderr)")
            #expect(received.stderr.contains("'Documents'"), "\(received.stderr)")
            #expect(sent.status == 1, "\(sent.stderr)")
            #expect(!tree.exists("dst/Documents/x.txt"))
            #expect(TransferProcess.recordedOutcome(in: tree.path("dst")) == "failure")
        }

        @Test func noSenderWithinTheAcceptTimeoutIsAFailure() throws {
            let tree = try TestTree()
            let result = try AMKProcess.run(["receive", "--listen", "127.0.0.1:0", "--container", tree.path("dst"),
                                             "--accept-timeout", "1"], scratch: tree.root)
            #expect(result.status == 1)
            #expect(result.stderr.contains("no sender connected"), "\(result.stderr)")
        }

        @Test func anUnknownExtensionIsAUsageError() throws {
            let tree = try TestTree()
            let result = try AMKProcess.run(["receive", "--listen", "127.0.0.1:0", "--container", tree.path("dst"),
                                             "--extension", "nope"], scratch: tree.root)
            #expect(result.status == 2)
            #expect(result.stderr.contains("unknown extension 'nope'"), "\(result.stderr)")
        }
    }
}
