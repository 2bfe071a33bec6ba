import Foundation
import TestSupport
import Testing

extension AMKTests {
    /// What an export skips is printed as `amk pack` prints it, once the export is over: a FIFO
    /// inside the container used to vanish from the archive without a word.
    @MainActor struct ExportWarningsPrinting {
        @Test func aFIFOInTheContainerIsNamedOnStandardError() throws {
            let tree = try TestTree()
            try tree.write("src/Documents/a.txt", "alpha\n")
            #expect(mkfifo(tree.path("src/Documents/pipe"), 0o644) == 0)
            let exported = try AMKProcess.run(
                ["export", "--container", tree.path("src"), "--extension", "files", "-o", tree.path("a.tar.xz")])
            #expect(exported.status == 0, "\(exported.stderr)")
            #expect(
                exported.stderr.contains("amk: warning: \(tree.path("src/Documents/pipe")): skipped: FIFOs are not archived"),
                "\(exported.stderr)")
            #expect(!exported.stdout.contains("warning"), "warnings go to standard error: \(exported.stdout)")
            let listed = try AMKProcess.run(["list", tree.path("a.tar.xz")])
            #expect(listed.stdout.contains("Documents/a.txt"), "\(listed.stdout)")
            #expect(!listed.stdout.contains("pipe"), "\(listed.stdout)")
        }
    }
}
