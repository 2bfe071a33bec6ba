import Foundation
import TestSupport
import Testing

extension AMKTests {
    /// Output that cannot be written is an error, as coreutils makes it: a listing or a report sent
    /// to a full disk ends with status 1 and the reason, not with success and nothing written.
    @Suite(.enabled(if: FileManager.default.fileExists(atPath: "/dev/full"), "needs /dev/full"))
    struct StandardOutputTests {
        let tree: TestTree

        init() throws {
            tree = try TestTree()
            _ = try tree.packApp()
        }

        static let commands = [
            "list app.tar.xz", "list -l app.tar.xz", "list --json app.tar.xz", "list app.tar.xz app/docs",
            "cat app.tar.xz | \"$AMK\" list -", "info app.tar.xz", "info --json app.tar.xz", "verify app.tar.xz",
            "extract -O app.tar.xz app/a.txt", "--version", "--help",
            // An archive written to standard output is named so (it was "file descriptor 1").
            "pack src/app -o - -q"
        ]

        @Test(arguments: commands)
        func aFullDiskIsAnError(command: String) throws {
            let line = (command.hasPrefix("cat ") ? command : "\"$AMK\" " + command) + " > /dev/full"
            let result = try ShellPipeline.run(line, in: tree.url("."))
            #expect(result.status == 1, "\(line): \(result.stderr)")
            // One line, naming the output (and, for extract -O, the member being written).
            #expect(
                result.stderr.hasPrefix("amk: standard output") && result.stderr.hasSuffix("write failed: No space left on device\n")
                    && result.stderr.split(separator: "\n").count == 1,
                "\(line): \(result.stderr)")
        }

        /// The same commands succeed where the output goes.
        @Test(arguments: commands)
        func anOutputThatTakesItIsASuccess(command: String) throws {
            let line = (command.hasPrefix("cat ") ? command : "\"$AMK\" " + command) + " > /dev/null"
            let result = try ShellPipeline.run(line, in: tree.url("."))
            #expect(result.status == 0, "\(line): \(result.stderr)")
            #expect(result.stderr.isEmpty, "\(line): \(result.stderr)")
        }

        /// An archive written to standard output by name (`-o /dev/stdout`, `/proc/self/fd/1`)
        /// shares it as `-o -` does: the summary, the JSON document and `-v` go to standard
        /// error. They were printed after the archive, inside the stream, and `xz -t` refused it.
        @Test(
            .enabled(if: ChildProcess.lookUp("xz") != nil, "needs xz"),
            arguments: [
                "pack src/app -o /dev/stdout", "pack src/app -o /proc/self/fd/1 -v", "pack src/app -o /dev/stdout --json",
                "export --container src/app -o /dev/stdout --no-progress"
            ])
        func anArchiveWrittenToStandardOutputByNameStaysWhole(command: String) throws {
            let result = try ShellPipeline.run("\"$AMK\" \(command) | xz -t", in: tree.url("."))
            #expect(result.status == 0, "\(command): \(result.stderr)")
            #expect(result.stderr.contains(command.hasPrefix("export") ? "exported with" : "packed") || command.contains("--json"))
            #expect(!result.stderr.contains("xz:"), "\(command): \(result.stderr)")
        }
    }
}
