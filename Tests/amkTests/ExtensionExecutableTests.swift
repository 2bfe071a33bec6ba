import Foundation
import TestSupport
import Testing

extension AMKTests {
    /// `--extension-executable PATH`: a user's extension executable (here the test extension,
    /// Tests/TestExtension) run by export, import, send and receive; and what amk says when one
    /// fails.
    @MainActor struct ExtensionExecutableOption {
        nonisolated static let testExtension = BuildProducts.path("amk-test-extension")

        @Test func exportAndImportRunAUsersExtensionExecutable() throws {
            let tree = try TestTree()
            try tree.write("src/Documents/a.txt", "alpha\n")
            try tree.write("src/Documents/b.txt", "beta\n")
            let exported = try AMKProcess.run(
                ["export", "--container", tree.path("src"), "--extension-executable", Self.testExtension, "-o", tree.path("a.tar.xz")])
            #expect(exported.status == 0, "\(exported.stderr)")
            // The properties and the name come from the process.
            #expect(exported.stdout.contains("exported with amk-test-extension"), "\(exported.stdout)")
            #expect(exported.stdout.contains("version 7.1"), "\(exported.stdout)")
            let imported = try AMKProcess.run(
                ["import", tree.path("a.tar.xz"), "--container", tree.path("dst"), "--extension-executable", Self.testExtension])
            #expect(imported.status == 0, "\(imported.stderr)")
            #expect(TransferProcess.files(under: tree.path("dst"))["Documents/b.txt"] == Data("beta\n".utf8))
        }

        @Test func sendAndReceiveRunAUsersExtensionExecutable() throws {
            let tree = try TestTree()
            try tree.write("src/Documents/a.txt", "alpha\n")
            let receiver = try TransferProcess.startReceiver(
                container: tree.path("dst"), extra: ["--extension-executable", Self.testExtension])
            let sent = try AMKProcess.run(
                [
                    "send", "--container", tree.path("src"), "--to", receiver.endpoint, "--code", receiver.code,
                    "--extension-executable", Self.testExtension, "--preset", "0"
                ])
            let received = try receiver.process.waitUntilExit()
            #expect(sent.status == 0, "\(sent.stderr)")
            #expect(received.status == 0)
            #expect(TransferProcess.files(under: tree.path("dst"))["Documents/a.txt"] == Data("alpha\n".utf8))
        }

        @Test func anExtensionThatIsNotOneIsNamedAndNothingIsWritten() throws {
            let tree = try TestTree()
            try tree.write("src/Documents/a.txt", "alpha\n")
            try tree.write("not-an-extension.sh", "#!/bin/sh\necho hello >&3\n")
            _ = chmod(tree.path("not-an-extension.sh"), 0o755)
            let result = try AMKProcess.run(
                [
                    "export", "--container", tree.path("src"), "--extension-executable", tree.path("not-an-extension.sh"),
                    "-o", tree.path("a.tar.xz")
                ])
            #expect(result.status == 1)
            #expect(
                result.stderr.contains("extension 'not-an-extension.sh'")
                    && result.stderr.contains("not the extension protocol at byte 0"), "\(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: tree.path("a.tar.xz")))
        }

        @Test func aCrashingImportIsReportedClearedAndRecorded() throws {
            let tree = try TestTree()
            try tree.write("src/Documents/a.txt", "alpha\n")
            try tree.write("src/Documents/b.txt", "beta\n")
            let exported = try AMKProcess.run(
                ["export", "--container", tree.path("src"), "-o", tree.path("a.tar.xz"), "--extension", "sample"])
            #expect(exported.status == 0, "\(exported.stderr)")
            try tree.write("dst/Documents/mine.txt", "mine\n")
            try tree.mkdir("dst/.amk")
            try tree.write("dst/.amk/container", "")
            // amk passes the extension a minimal environment: a wrapper sets the misbehaviour
            // and becomes the test extension, channel and all.
            try tree.write(
                "crashing.sh", "#!/bin/sh\nAMK_TEST_BEHAVIOUR=segv AMK_TEST_AFTER=1 exec '\(Self.testExtension)'\n")
            _ = chmod(tree.path("crashing.sh"), 0o755)
            let result = try AMKProcess.run(
                ["import", tree.path("a.tar.xz"), "--container", tree.path("dst"), "--extension-executable", tree.path("crashing.sh")])
            #expect(result.status == 1, "\(result.stderr)")
            #expect(result.stderr.contains("SIGSEGV (11)"), "\(result.stderr)")
            // Cleared (the file it had copied and the one that was there), and the failure recorded.
            let left = TransferProcess.files(under: tree.path("dst")).keys.filter { $0.hasPrefix("Documents/") }
            #expect(left.isEmpty, "\(left)")
            let status = try String(contentsOfFile: tree.path("dst/.amk/import-status.json"), encoding: .utf8)
            #expect(status.contains("SIGSEGV"), "\(status)")
        }

        /// An extension whose end of the channel breaks says so on standard error (the host's)
        /// before it exits: the host can only see that the channel closed, not why.
        @Test func anExtensionWhoseChannelBreaksSaysWhy() throws {
            let tree = try TestTree()
            try tree.write("src/Documents/a.txt", "alpha\n")
            try tree.write("closing.sh", "#!/bin/sh\nAMK_TEST_BEHAVIOUR=close exec '\(Self.testExtension)'\n")
            _ = chmod(tree.path("closing.sh"), 0o755)
            let result = try AMKProcess.run(
                ["export", "--container", tree.path("src"), "-o", tree.path("a.tar.xz"), "--extension-executable", tree.path("closing.sh")])
            #expect(result.status == 1, "\(result.stderr)")
            #expect(
                result.stderr.contains("the channel failed while ") && result.stderr.contains("Bad file descriptor")
                    && result.stderr.contains("; exiting"), "\(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: tree.path("a.tar.xz")))
        }

        @Test func bothOptionsAtOnceIsAUsageError() throws {
            let tree = try TestTree()
            let result = try AMKProcess.run(
                [
                    "export", "--container", tree.path("src"), "-o", tree.path("a.tar.xz"), "--extension", "sample",
                    "--extension-executable", Self.testExtension
                ])
            #expect(result.status == 2)
            #expect(result.stderr.contains("not both"), "\(result.stderr)")
        }
    }
}
