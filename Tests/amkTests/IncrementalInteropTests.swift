import Foundation
import TestSupport
import Testing

extension AMKTests {
    /// What GNU tar writes beyond plain members: the dumpdirs of an incremental backup
    /// (`--listed-incremental`: every folder a `D` member whose content lists its names) and a
    /// volume label (`--label`, a `V` member whose text is no path). `tar -x` makes the folders
    /// and passes over the label; so does `amk extract`.
    @Suite(.enabled(if: ChildProcess.lookUp("xz") != nil && ChildProcess.lookUp("tar") != nil, "needs xz and GNU tar"))
    @MainActor struct IncrementalInterop {
        let tree: TestTree

        init() throws {
            tree = try TestTree()
            try tree.write("src/docs/a.txt", "alpha\n")
            try tree.write("src/docs/deep/b.txt", "bravo\n")
            try tree.mkdir("src/empty")
        }

        func extracted(_ archive: String, into folder: String) throws -> AMKProcess.Result {
            try AMKProcess.run(["extract", archive, "-C", folder], in: tree.root)
        }

        @Test func aFullThenAnIncrementalBackupExtract() throws {
            let full = try ShellPipeline.run("tar --listed-incremental=snap -cJf level0.tar.xz -C src .", in: tree.root)
            #expect(full.status == 0, "\(full.stderr)")
            let result = try extracted("level0.tar.xz", into: "out")
            #expect(result.status == 0, "\(result.stderr)")
            let same = try ShellPipeline.run("diff -r src out", in: tree.root)
            #expect(same.status == 0, "\(same.stdout)")
            let listing = try AMKProcess.run(["list", "level0.tar.xz"], in: tree.root)
            #expect(listing.stdout.contains("./docs/deep/\n") && listing.stdout.contains("./empty/\n"), "\(listing.stdout)")

            // The next level stores the changed file and every folder again, as dumpdirs.
            try tree.write("src/docs/deep/b.txt", "bravo, changed\n")
            try tree.write("src/c.txt", "charlie\n")
            let next = try ShellPipeline.run(
                "touch -d '+2 seconds' src/docs/deep/b.txt src/c.txt && tar --listed-incremental=snap -cJf level1.tar.xz -C src .",
                in: tree.root)
            #expect(next.status == 0, "\(next.stderr)")
            let layered = try extracted("level1.tar.xz", into: "out")
            #expect(layered.status == 0, "\(layered.stderr)")
            let after = try ShellPipeline.run("diff -r src out", in: tree.root)
            #expect(after.status == 0, "\(after.stdout)")
        }

        @Test func aVolumeLabelIsPassedOver() throws {
            let made = try ShellPipeline.run("tar --label='Backup of ../home/*' -cJf labelled.tar.xz -C src .", in: tree.root)
            #expect(made.status == 0, "\(made.stderr)")
            let result = try extracted("labelled.tar.xz", into: "out")
            #expect(result.status == 0 && result.stderr.isEmpty, "\(result.stderr)")
            let same = try ShellPipeline.run("diff -r src out && test ! -e home && test ! -e 'out/Backup of ..'", in: tree.root)
            #expect(same.status == 0, "\(same.stdout)")
        }
    }
}
