import Foundation
import TestSupport
import Testing

extension AMKTests {
    /// amk under a low open-file limit (`ulimit -n`): below what it needs it says so and stops
    /// (at 8 to 12 it died by a trap in the system's thread pool about one run in twenty, with
    /// no message); at that limit every command runs, an extension process included.
    @Suite struct DescriptorLimit {
        let tree: TestTree

        init() throws {
            tree = try TestTree()
            // Deeper than the extractor keeps folders open (16): each level needs its folder.
            let deep = (0..<60).map { "d\($0)" }.joined(separator: "/")
            try tree.write("src/Documents/\(deep)/leaf.txt", "leaf\n")
            try tree.write("src/Documents/notes.txt", "notes\n")
        }

        /// `command` run by `/bin/sh` with at most `files` descriptors.
        func underLimit(_ files: Int, _ command: String) throws -> AMKProcess.Result {
            try ShellPipeline.run("ulimit -n \(files); exec \(command)", in: tree.root)
        }

        @Test(arguments: [8, 12, 16, 31])
        func belowTheMinimumEveryCommandSaysSo(files: Int) throws {
            for command in ["\"$AMK\" --version", "\"$AMK\" list nothing.tar.xz", "\"$AMK\" pack src -o p.tar.xz"] {
                let result = try underLimit(files, command)
                #expect(result.status == 1, "\(command): \(result.stderr)")
                #expect(
                    result.stderr == "amk: at least 32 open files are needed, and this process may open only \(files)\n",
                    "\(command): \(result.stderr)")
            }
            #expect(!tree.exists("p.tar.xz"))
        }

        /// At the minimum: a pack and an extraction of a tree deeper than the folders the
        /// extractor keeps open, and an export and an import through extension processes (whose
        /// start once asked for descriptor 64, past such a limit, and failed with "Invalid
        /// argument").
        @Test func atTheMinimumEveryCommandRuns() throws {
            let steps = [
                "\"$AMK\" pack src -o p.tar.xz -q",
                "\"$AMK\" extract p.tar.xz -C out -q",
                "\"$AMK\" export --container src -o e.tar.xz --preset 0",
                "\"$AMK\" import e.tar.xz --container dst"
            ]
            for step in steps {
                let result = try underLimit(32, step)
                #expect(result.status == 0, "\(step): \(result.stderr)")
            }
            let deep = (0..<60).map { "d\($0)" }.joined(separator: "/")
            #expect(try tree.read("out/src/Documents/\(deep)/leaf.txt") == Array("leaf\n".utf8))
            #expect(try tree.read("dst/Documents/notes.txt") == Array("notes\n".utf8))
        }
    }
}
