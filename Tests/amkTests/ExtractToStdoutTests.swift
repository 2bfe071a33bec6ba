import Foundation
import TestSupport
import Testing

extension AMKTests {
    /// `amk extract -O`: the selected files' content on standard output, as `tar -xO` gives it,
    /// and nothing created.
    @Suite struct ExtractToStdoutTests {
        let tree: TestTree
        let archive: String

        init() throws {
            tree = try TestTree()
            archive = try tree.packApp()
        }

        /// tar reads the same archive and must print the same bytes for the same selection.
        @Test(
            .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/tar")),
            arguments: [[], ["app/docs"], ["app/docs/c.txt", "app/a.txt"], ["app/link", "app/empty"]] as [[String]])
        func theContentIsTars(members: [String]) throws {
            let ours = try AMKProcess.run(["extract", "-O", archive] + members, in: tree.url("."))
            #expect(ours.status == 0, "\(ours.stderr)")
            #expect(ours.stderr.isEmpty, "no summary: \(ours.stderr)")
            let tars = try ChildProcess.run("/usr/bin/tar", ["-xOJf", archive] + members, environment: [:])
            #expect(tars.status == 0)
            #expect(Array(ours.stdout.utf8) == tars.stdout)
            #expect(members.first != "app/link" || ours.stdout.isEmpty, "a link and a folder have no content")
            #expect(!tree.exists("app"), "nothing is extracted")
        }

        /// The same through a pipe, and `-v` names the files on standard error, where they do not
        /// mix with the content.
        @Test func aStreamAndVerbose() throws {
            let result = try ShellPipeline.run("cat app.tar.xz | \"$AMK\" extract -O -v - app/docs", in: tree.url("."))
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout == "bravo\ncharlie\n")
            // -v also logs the engine's diagnostics there; the names are lines of their own.
            let lines = result.stderr.split(separator: "\n")
            #expect(lines.filter { $0.hasPrefix("app/") } == ["app/docs/b.txt", "app/docs/c.txt"], "\(result.stderr)")
            #expect(!tree.exists("app"))
        }

        @Test func aMissingMemberIsAnError() throws {
            let result = try AMKProcess.run(["extract", "-O", archive, "app/none"])
            #expect(result.status == 1)
            #expect(result.stdout.isEmpty)
            #expect(result.stderr.contains("app/none") && result.stderr.contains("no such member"), "\(result.stderr)")
        }

        @Test func jsonCannotShareTheOutput() throws {
            let result = try AMKProcess.run(["extract", "-O", "--json", archive])
            #expect(result.status == 2)
            #expect(result.stderr.contains("--json"), "\(result.stderr)")
        }

        /// A reader that stops early (`| head -c 5`) ends the extraction without a message; the
        /// status says the content was not all delivered.
        @Test func aReaderThatStopsEndsItQuietly() throws {
            try tree.write("src/big/big.txt", TestTree.text(count: 8 << 20, seed: 3))
            let big = tree.path("big.tar.xz")
            let pack = try AMKProcess.run(["pack", tree.path("src/big"), "-o", big, "--preset", "0"])
            try #require(pack.status == 0, "\(pack.stderr)")
            let piped = try AMKProcess.Result(
                ChildProcess.run(
                    "/bin/sh", ["-c", "{ \"$AMK\" extract -O big.tar.xz 2>err; echo $? > status; } | head -c 5"],
                    in: tree.url("."), environment: ["AMK": AMKProcess.binary]))
            #expect(piped.stdout.count == 5)
            #expect(try tree.read("status") == Array("1\n".utf8))
            let err = try tree.read("err")
            #expect(err.isEmpty, "\(String(decoding: err, as: UTF8.self))")
        }
    }
}
