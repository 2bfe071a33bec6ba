import Foundation
import Testing

extension AMKTests {
    /// `amk demo`, the README's first command: it must migrate its container and say so in the
    /// shape the README shows.
    @Suite @MainActor struct DemoCommand {
        /// A report line with its figures replaced, so that two runs, or a run and the README,
        /// compare: sizes, rates, times and counts vary from run to run, the wording must not.
        static func shape(_ line: Substring) -> String {
            String(line)
                .replacing(/\d+(\.\d+)? (B|KiB|MiB|GiB)\/s/, with: "RATE")
                .replacing(/\d+(\.\d+)? (B|KiB|MiB|GiB)/, with: "SIZE")
                .replacing(/\d+(\.\d+)? s\b/, with: "TIME")
                .replacing(/\d+(\.\d+)?%/, with: "PERCENT")
                .replacing(/\d+/, with: "N")
                .replacing(#/ +/#, with: " ")
        }

        /// The demo's output as README.md shows it, after `$ amk demo`.
        static func readmeOutput(filePath: String = #filePath) throws -> [Substring] {
            let readme = URL(fileURLWithPath: filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appending(path: "README.md")
            let text = try String(contentsOf: readme, encoding: .utf8)
            let start = try #require(text.range(of: "```console\n$ amk demo\n"))
            let end = try #require(text[start.upperBound...].range(of: "```"))
            return text[start.upperBound..<end.lowerBound].split(separator: "\n")
        }

        @Test func migratesAndChecksEveryFileAsTheReadmeShows() throws {
            let result = try AMKProcess.run(["demo", "--size-mib", "2"])
            #expect(result.status == 0, "\(result.stderr)")
            let lines = result.stdout.split(separator: "\n")
            try #require(lines.count == 7, "\(result.stdout)")

            // What was made is what was checked: every file, the link and every folder.
            let made = try #require(lines[1].firstMatch(of: #/container  (\d+) files, 1 link, (\d+) folders, /#))
            let checked = try #require(lines[5].firstMatch(of: /every byte and mode matches: (\d+) files, 1 link, (\d+) folders$/))
            #expect(made.1 == checked.1 && made.2 == checked.2)
            #expect(Int(made.1) ?? 0 > 20)
            #expect(lines[1].contains(": databases ") && lines[1].contains(", media ") && lines[1].contains(", other "))

            // The README's block is a real run's output: paste a new one when the report changes.
            let shown = try Self.readmeOutput().map(Self.shape)
            #expect(shown.count == lines.count)
            for (shown, printed) in zip(shown, lines.map(Self.shape)) {
                #expect(shown == printed, "README.md's demo output is not what amk demo prints")
            }
        }

        @Test func refusesSizesOutsideItsRange() throws {
            for size in ["0", "16385"] {
                let result = try AMKProcess.run(["demo", "--size-mib", size])
                #expect(result.status != 0 && result.stderr.contains("--size-mib must be 1 to 16384"), "\(result.stderr)")
            }
        }
    }
}
