import Foundation
import TestSupport
import Testing

extension AMKTests {
    /// `amk pack --skip-unreadable` and `--allow-changes`: what tar does with a file it cannot read
    /// or one that changes under it (a warning, and the rest of the tree packed), on request; by
    /// default both fail the pack, naming the file and the option.
    @Suite @MainActor struct PackTolerance {
        let tree: TestTree

        init() throws {
            tree = try TestTree()
        }

        /// Runs amk without root's power to read anything: as `nobody` through setpriv when the
        /// tests run as root (as in CI), as the test's own user otherwise.
        func runUnprivileged(_ arguments: [String]) throws -> AMKProcess.Result {
            guard geteuid() == 0 else { return try AMKProcess.run(arguments) }
            return try AMKProcess.Result(
                ChildProcess.run(
                    "/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", AMKProcess.binary] + arguments,
                    environment: [:]))
        }

        @Test(.enabled(if: geteuid() != 0 || FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")))
        func unreadableFilesAndFoldersAreSkippedOnRequest() throws {
            try tree.write("src/a.txt", "readable\n")
            try tree.write("src/secret.txt", Array("hidden\n".utf8), mode: 0o000)
            try tree.write("src/locked/inside.txt", "inside\n")
            chmod(tree.path("src/locked"), 0o000)
            defer { chmod(tree.path("src/locked"), 0o755) }
            // Everything above the tree may be entered by the unprivileged user; the output goes
            // into the tree's own folder.
            chmod(tree.path("."), 0o777)
            let archive = tree.path("out.tar.xz")

            let refused = try runUnprivileged(["pack", tree.path("src"), "-o", archive])
            #expect(refused.status == 1)
            #expect(refused.stderr.contains("Permission denied") && refused.stderr.contains("--skip-unreadable"), "\(refused.stderr)")
            #expect(!tree.exists("out.tar.xz"), "a failed pack leaves nothing")

            let skipped = try runUnprivileged(["pack", "--skip-unreadable", tree.path("src"), "-o", archive])
            #expect(skipped.status == 0, "\(skipped.stderr)")
            let warnings = skipped.stderr.split(separator: "\n").filter { $0.hasPrefix("amk: warning: ") }
            #expect(warnings.count == 2, "\(skipped.stderr)")
            #expect(warnings.contains { $0.contains("src/secret.txt") } && warnings.contains { $0.contains("src/locked") })
            let listing = try AMKProcess.run(["list", archive])
            #expect(listing.status == 0)
            #expect(listing.stdout.split(separator: "\n") == ["src/", "src/a.txt"], "\(listing.stdout)")
        }

        /// A file of /proc says it is empty and is not: it grows while it is read.
        @Test(.enabled(if: FileManager.default.fileExists(atPath: "/proc/sys/kernel/ostype")))
        func aFileThatChangesIsStoredOnRequest() throws {
            let archive = tree.path("proc.tar.xz")
            let refused = try AMKProcess.run(["pack", "/proc/sys/kernel/ostype", "-o", archive])
            #expect(refused.status == 1)
            #expect(refused.stderr.split(separator: "\n").count == 1, "\(refused.stderr)")
            #expect(
                refused.stderr.contains("ostype: grew while it was read") && refused.stderr.contains("--allow-changes")
                    && !refused.stderr.contains("stored"),
                "the failure says nothing was stored: \(refused.stderr)")
            #expect(!tree.exists("proc.tar.xz"))

            let stored = try AMKProcess.run(["pack", "--allow-changes", "/proc/sys/kernel/ostype", "-o", archive])
            #expect(stored.status == 0, "\(stored.stderr)")
            #expect(
                stored.stderr.contains("amk: warning: /proc/sys/kernel/ostype: grew while it was read; only the first 0 bytes are stored"))
            let listing = try AMKProcess.run(["list", "--long", archive])
            #expect(listing.stdout.contains(" 0 ") && listing.stdout.hasSuffix("ostype\n"), "\(listing.stdout)")
            let verify = try AMKProcess.run(["verify", archive])
            #expect(verify.status == 0, "\(verify.stderr)")
        }
    }
}
