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
            func blockFilters(_ extra: [String]) throws -> [String] {
                let archive = tree.path("out.tar.xz")
                let pack = try AMKProcess.run(
                    ["pack", tree.path("app"), "-o", archive, "-q", "--chunk-size", "1M", "--preset", "1"] + extra)
                #expect(pack.status == 0, "\(pack.stderr)")
                let out = tree.path("out-\(extra.count)")
                let extract = try AMKProcess.run(["extract", archive, "-C", out])
                #expect(extract.status == 0, "\(extract.stderr)")
                #expect(try tree.read("out-\(extra.count)/app/bin/tool") == program)
                let list = try ChildProcess.run("xz", ["-lvv", archive])
                return list.stdoutString.split(separator: "\n").filter { $0.contains("--lzma2") }.map(String.init)
            }
            let byDefault = try blockFilters([])
            #expect(byDefault.filter { $0.contains("--x86") }.count >= 2, "\(byDefault.joined(separator: "\n"))")
            #expect(byDefault.contains { !$0.contains("--x86") }, "the notes' block is not filtered")
            let off = try blockFilters(["--no-x86-filter"])
            #expect(!off.isEmpty && off.allSatisfy { !$0.contains("--x86") }, "\(off.joined(separator: "\n"))")
        }
    }
}
