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
