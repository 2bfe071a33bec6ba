import Foundation
import TestSupport
import Testing

@testable import amk

extension AMKTests {
    /// `amk pack --x86-filter` (the default) and `--no-x86-filter`.
    @Suite struct X86FilterFlagTests {
        @Test(.enabled(if: ChildProcess.lookUp("xz") != nil, "xz is not installed"))
        func executablesAreFilteredUnlessTurnedOff() throws {
            let tree = try TestTree()
            let program = MachineCode.elfExecutable(codeSize: 3 << 20, seed: 81)
            _ = try tree.write("app/bin/tool", program, mode: 0o755)
            try tree.write("app/notes.txt", String(repeating: "a line of notes about the tool\n", count: 40_000))
            /// Packs with `extra`, checks the program comes back, and returns what the pack printed
            /// and the filter chain of every block, as `xz -lvv` prints it.
            func pack(_ extra: [String]) throws -> (output: String, filters: [String]) {
                let archive = tree.path("out.tar.xz")
                let pack = try AMKProcess.run(["pack", tree.path("app"), "-o", archive, "--chunk-size", "1M", "--preset", "1"] + extra)
                #expect(pack.status == 0, "\(pack.stderr)")
                let out = tree.path("out-\(extra.count)")
                let extract = try AMKProcess.run(["extract", archive, "-C", out])
                #expect(extract.status == 0, "\(extract.stderr)")
                #expect(try tree.read("out-\(extra.count)/app/bin/tool") == program)
                let list = try ChildProcess.run("xz", ["-lvv", archive])
                return (pack.stdout, list.stdoutString.split(separator: "\n").filter { $0.contains("--lzma2") }.map(String.init))
            }
            let byDefault = try pack([])
            let filtered = byDefault.filters.filter { $0.contains("--x86") }.count
            #expect(filtered >= 2, "\(byDefault.filters.joined(separator: "\n"))")
            #expect(byDefault.filters.contains { !$0.contains("--x86") }, "the notes' block is not filtered")
            #expect(byDefault.output.contains("stored, \(filtered) x86)"), "the summary counts them: \(byDefault.output)")

            let off = try pack(["--no-x86-filter", "--json"])
            #expect(!off.filters.isEmpty && off.filters.allSatisfy { !$0.contains("--x86") }, "\(off.filters.joined(separator: "\n"))")
            let report = try JSONSerialization.jsonObject(with: Data(off.output.utf8)) as? [String: Any]
            #expect((report?["x86Blocks"] as? NSNumber)?.intValue == 0, "\(off.output)")
            // xz lists the two index blocks after the data blocks; the summary counts data blocks.
            #expect((report?["blocks"] as? NSNumber)?.intValue == off.filters.count - 2)
        }
    }
}
