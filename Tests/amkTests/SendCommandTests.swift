import Foundation
import Testing

extension AMKTests {
    /// `amk send` against `amk receive`, two processes on one machine.
    @Suite(
        .enabled(
            if: TransferProcess.has("send") && TransferProcess.has("receive"),
            "register SendCommand and ReceiveCommand in AMK.commands"))
    @MainActor struct SendCommand {
        /// A misspelt path, for the container to send or the extension to run, is refused before
        /// anything happens (status 2): `send` made an empty container at the misspelt path and
        /// sent it, both sides saying it was imported; `import` and `receive` with an extension
        /// executable that is not there cleared the container (`receive` after listening, pairing
        /// and taking the whole transfer), as after any failed import.
        @Test func aMisspeltContainerOrExtensionIsRefusedBeforeAnythingHappens() throws {
            let tree = try TestTree()
            try tree.write("dst/Documents/old.txt", "keep me\n")
            try tree.write("src/Documents/a.txt", "a\n")
            let send = try AMKProcess.run(
                ["send", "--container", tree.path("srcc"), "--to", "127.0.0.1:9", "--code", "7KQ2-9XMF-3PWD-HB6T"])
            #expect(send.status == 2, "\(send.stderr)")
            #expect(send.stderr.contains("is not a folder"), "\(send.stderr)")
            #expect(!tree.exists("srcc"), "the misspelt container was made")
            let export = try AMKProcess.run(["export", "--container", tree.path("src"), "--extension", "files", "-o", tree.path("a.tar.xz")]
            )
            try #require(export.status == 0, "\(export.stderr)")
            for command in [
                ["import", tree.path("a.tar.xz"), "--container", tree.path("dst")],
                ["receive", "--container", tree.path("dst"), "--listen", "127.0.0.1:0"]
            ] {
                let result = try AMKProcess.run(command + ["--extension-executable", tree.path("no-such-extension")])
                #expect(result.status == 2, "\(command[0]): \(result.stderr)")
                #expect(result.stderr.contains("is not an executable file"), "\(command[0]): \(result.stderr)")
                #expect(try tree.read("dst/Documents/old.txt") == Array("keep me\n".utf8), "\(command[0]) cleared the container")
            }
        }

        @Test func aTwoProcessMigrationArrivesByteIdentical() throws {
            let tree = try TestTree()
            try tree.write("src/Documents/notes/a.txt", "hello, transfer\n")
            try tree.write("src/Documents/media/big.bin", TestTree.noise(count: 2 << 20, seed: 3))
            try tree.write("src/Library/Preferences/settings.json", #"{"theme":"dark"}"#)
            let receiver = try TransferProcess.startReceiver(container: tree.path("dst"))
            let sent = try AMKProcess.run(
                [
                    "send", "--container", tree.path("src"), "--extension", "files",
                    "--to", receiver.endpoint, "--code", receiver.code, "--chunk-size", "1MiB", "--preset", "0"
                ])
            let received = try AMKProcess.collect(receiver.process)
            #expect(sent.status == 0, "\(sent.stderr)")
            #expect(received.status == 0, "\(received.stderr)")
            #expect(
                sent.stdout.wholeMatch(
                    of:
                        /sent \d+ bytes, \d+ compressed to 127\.0\.0\.1:\d+ \(version 1\)\nreceiver: imported into .*\/dst \(source version 1\)\n/
                ) != nil,
                "\(sent.stdout)")
            #expect(received.stdout.hasSuffix("from src (linux, version 1)\n"), "\(received.stdout)")
            let original = TransferProcess.files(under: tree.path("src"))
            #expect(original.count == 3)
            #expect(TransferProcess.files(under: tree.path("dst")) == original)
            #expect(TransferProcess.recordedOutcome(in: tree.path("dst")) == "success")
        }

        /// The sender is killed with SIGKILL once the receiver is writing the big file: the
        /// receiver fails the import and the destination keeps nothing of it.
        @Test func aSenderKilledMidStreamFailsTheImport() throws {
            let tree = try TestTree()
            let random = try FileHandle(forReadingFrom: URL(fileURLWithPath: "/dev/urandom"))
            try tree.write("src/Documents/big.bin", Array(random.readData(ofLength: 32 << 20)))
            try random.close()
            try tree.write("dst/Documents/kept.txt", "kept\n")
            let receiver = try TransferProcess.startReceiver(container: tree.path("dst"), extra: ["--adopt-container"])
            let sender = try AMKProcess.start(
                [
                    "send", "--container", tree.path("src"), "--to", receiver.endpoint, "--code", receiver.code,
                    "--chunk-size", "1MiB", "--preset", "0"
                ])
            let streaming = TransferProcess.waitUntil(seconds: 30) { TransferProcess.stagedBytes(in: tree.path("dst")) > 2 << 20 }
            kill(sender.processIdentifier, SIGKILL)
            let killed = try sender.waitUntilExit()
            #expect(streaming, "the receiver never staged 2 MiB")
            #expect(killed.terminationReason == .uncaughtSignal, "the sender finished before it could be killed")
            let received = try AMKProcess.collect(receiver.process)
            #expect(received.status == 1)
            #expect(received.stderr.contains("the archive stream broke off or is damaged"), "\(received.stderr)")
            #expect(TransferProcess.files(under: tree.path("dst")) == ["Documents/kept.txt": Data("kept\n".utf8)])
            #expect(TransferProcess.stagedBytes(in: tree.path("dst")) == 0)
            #expect(TransferProcess.recordedOutcome(in: tree.path("dst")) == "failure")
        }

        /// Ctrl-C on a sender whose receiver has stopped reading (a stalled network): the engine
        /// is blocked writing into a full pipe, and the interruption still ends the sender at once,
        /// not at the 5 s deadline that gives up on work that does not unwind.
        @Test(.timeLimit(.minutes(1))) func anInterruptEndsASenderWhoseReceiverStoppedReading() throws {
            let tree = try TestTree()
            try tree.write("src/Documents/big.bin", TestTree.noise(count: 48 << 20, seed: 11))
            let receiver = try TransferProcess.startReceiver(container: tree.path("dst"))
            let sender = try AMKProcess.start(
                [
                    "send", "--container", tree.path("src"), "--to", receiver.endpoint, "--code", receiver.code,
                    "--chunk-size", "1MiB", "--preset", "0"
                ])
            let streaming = TransferProcess.waitUntil(seconds: 30) { TransferProcess.stagedBytes(in: tree.path("dst")) > 1 << 20 }
            #expect(receiver.process.send(SIGSTOP))
            defer { _ = receiver.process.send(SIGCONT) }
            // Long enough for every buffer between the two to fill.
            Thread.sleep(forTimeInterval: 1)
            #expect(sender.isRunning, "the sender finished before the receiver stopped")
            #expect(sender.send(SIGINT))
            let start = Date()
            let sent = try AMKProcess.collect(sender)
            let elapsed = Date().timeIntervalSince(start)
            #expect(streaming, "the receiver never staged 1 MiB")
            #expect(sent.status == 1)
            #expect(sent.stderr.hasPrefix("amk: interrupted\n"), "\(sent.stderr)")
            #expect(elapsed < 3, "\(elapsed) s after the interrupt")
            _ = receiver.process.send(SIGCONT)
            let received = try AMKProcess.collect(receiver.process)
            #expect(received.status == 1, "\(received.stderr)")
            #expect(TransferProcess.files(under: tree.path("dst")).isEmpty)
        }

        /// A receiver that reads the whole archive and never reports: `amk send` gives up at
        /// --status-timeout and says what the receiver did, instead of waiting for good.
        @Test(.timeLimit(.minutes(1))) func aReceiverThatNeverAnswersEndsTheSenderAtTheStatusTimeout() throws {
            let tree = try TestTree()
            try tree.write("src/Documents/a.txt", "hello, transfer\n")
            try tree.write("src/Documents/big.bin", TestTree.noise(count: 300_000, seed: 5))
            let receiver = try SilentReceiver(code: "7KQ2-9XMF-3PWD-HB6T")
            defer { receiver.release() }
            let start = Date()
            let sent = try AMKProcess.run(
                [
                    "send", "--container", tree.path("src"), "--to", receiver.endpoint, "--code", "7KQ2-9XMF-3PWD-HB6T",
                    "--preset", "0", "--status-timeout", "2"
                ])
            let elapsed = Date().timeIntervalSince(start)
            #expect(sent.status == 1)
            #expect(
                sent.stderr.hasPrefix("amk: no status from the receiver at \(receiver.endpoint) within 2 s after the end of the archive"),
                "\(sent.stderr)")
            #expect(elapsed >= 1.5 && elapsed < 20, "\(elapsed) s")
            #expect(receiver.archivedBytes > 300_000, "the receiver read the whole archive")
        }

        /// The transfer timeouts are seconds, fractions allowed; zero, negative, NaN and infinity
        /// are usage errors, not a wait that never ends or ends at once.
        @Test func timeoutsArePositiveFiniteSeconds() throws {
            let tree = try TestTree()
            for (flag, value) in [
                ("--status-timeout", "0"), ("--status-timeout", "-1"), ("--idle-timeout", "nan"),
                ("--idle-timeout", "inf"), ("--status-timeout", "ten")
            ] {
                let result = try AMKProcess.run(
                    [
                        "send", "--container", tree.path("src"), "--to", "127.0.0.1:9", "--code", "0000-0000-0000-0000",
                        "\(flag)=\(value)"
                    ])
                #expect(result.status == 2, "\(flag) \(value): \(result.stderr)")
                #expect(result.stderr.contains(flag), "\(flag) \(value): \(result.stderr)")
            }
            let help = try AMKProcess.run(["send", "--help"])
            #expect(help.stdout.contains("--status-timeout <seconds>") && help.stdout.contains("(default: 300.0)"), "\(help.stdout)")
        }

        @Test func aBadAddressOrCodeIsAUsageError() throws {
            let tree = try TestTree()
            let address = try AMKProcess.run(
                ["send", "--container", tree.path("src"), "--to", "::1:7070", "--code", "0000-0000-0000-0000"])
            #expect(address.status == 2)
            #expect(address.stderr.contains("write an IPv6 address in brackets, [::1]:7070"), "\(address.stderr)")
            let code = try AMKProcess.run(
                ["send", "--container", tree.path("src"), "--to", "localhost:7070", "--code", "ABCD-EFGH"])
            #expect(code.status == 2)
            #expect(code.stderr.contains("a pairing code has 16 characters"), "\(code.stderr)")
            let missing = try AMKProcess.run(["send", "--container", tree.path("src"), "--to", "localhost:7070"])
            #expect(missing.status == 2)
            #expect(missing.stderr.contains("--code"), "\(missing.stderr)")
        }

        /// A wrong code: the sender is refused and exits 1, the receiver says so and waits on, and
        /// the right code then goes through (the one the receiver printed, typed in lower case).
        @Test func aWrongCodeIsRefusedAndTheRightOneThenWorks() throws {
            let tree = try TestTree()
            try tree.write("src/Documents/a.txt", "hello, paired transfer\n")
            let receiver = try TransferProcess.startReceiver(container: tree.path("dst"))
            let wrong = try AMKProcess.run(
                [
                    "send", "--container", tree.path("src"), "--to", receiver.endpoint,
                    "--code", "ZZZZ-ZZZZ-ZZZZ-ZZZZ", "--preset", "0"
                ])
            #expect(wrong.status == 1)
            // The refusal looks the same when another sender paired first: the line says so.
            #expect(
                wrong.stderr.contains(
                    "refused the pairing code: check it against the code the receiver shows, unless another sender had paired with it first"
                ),
                "\(wrong.stderr)")
            let right = try AMKProcess.run(
                [
                    "send", "--container", tree.path("src"), "--to", receiver.endpoint,
                    "--code", receiver.code.lowercased(), "--preset", "0"
                ])
            let received = try AMKProcess.collect(receiver.process)
            #expect(right.status == 0, "\(right.stderr)")
            #expect(received.status == 0, "\(received.stderr)")
            #expect(received.stderr.contains("amk: refused a connection: a sender gave a wrong pairing code"), "\(received.stderr)")
            #expect(TransferProcess.files(under: tree.path("dst")) == TransferProcess.files(under: tree.path("src")))
        }

        @Test func nobodyListeningIsAFailure() throws {
            let tree = try TestTree()
            try tree.mkdir("src")
            // A port that was free a moment ago.
            let probe = try TransferProcess.startReceiver(container: tree.path("probe"))
            probe.process.send(SIGTERM)
            try probe.process.waitUntilExit()
            let result = try AMKProcess.run(
                ["send", "--container", tree.path("src"), "--to", probe.endpoint, "--code", probe.code])
            #expect(result.status == 1)
            #expect(result.stderr.contains("connect to \(probe.endpoint) failed: Connection refused"), "\(result.stderr)")
        }
    }
}
