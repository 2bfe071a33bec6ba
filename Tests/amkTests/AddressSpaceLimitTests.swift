import Foundation
import TestSupport
import Testing

extension AMKTests {
    /// amk under an address-space limit (`ulimit -v`): it finishes, or says which limit stops it,
    /// at every limit; it is never stopped by a signal and never waits forever for a thread.
    /// About a hundred runs of amk, started from low-priority threads (`.background`), whose
    /// priority they inherit: they leave the cores to the tests that time an extension.
    @Suite(.background) struct AddressSpaceLimit {
        let tree: TestTree

        init() throws {
            tree = try TestTree()
            for index in 0..<40 {
                try tree.write("src/t/d\(index % 4)/f\(index).txt", String(repeating: "line \(index) of text\n", count: 400))
            }
            let pack = try AMKProcess.run(["pack", tree.path("src/t"), "-o", tree.path("t.tar.xz")])
            try #require(pack.status == 0, "\(pack.stderr)")
        }

        /// `command` run by `/bin/sh` under `ulimit -v kib`, with 60 s before it is called hung
        /// (status 124); the shell's own status when amk could not even be started.
        func underLimit(_ kib: Int, _ command: String) throws -> AMKProcess.Result {
            try ShellPipeline.run(
                "rm -rf out; mkdir out; ulimit -v \(kib); exec timeout -s KILL 60 \(command)", in: tree.url("."))
        }

        /// From 64 MiB, where the program cannot even be loaded, to 768 MiB, where everything
        /// runs, in 32 MiB steps: a pack, a listing, an extraction from the file and from a pipe
        /// each either succeed with the right content or end with status 1 and one line naming
        /// the limit or the memory a block needs. Before, amk was killed by SIGSEGV or SIGABRT
        /// (an allocation the runtime could not make) or waited forever for a thread between
        /// about 80 and 400 MiB.
        @Test func everyLimitEndsInSuccessOrAMessage() throws {
            var succeeded = 0
            var refused = 0
            for mebibytes in stride(from: 64, through: 768, by: 32) {
                let commands = [
                    "\"$AMK\" pack --preset 1 src/t -o p.tar.xz",
                    "\"$AMK\" list -l t.tar.xz",
                    "\"$AMK\" extract t.tar.xz -C out",
                    "sh -c 'cat t.tar.xz | \"$AMK\" extract - -C out'"
                ]
                for command in commands {
                    let result = try underLimit(mebibytes << 10, command)
                    let context = "ulimit -v \(mebibytes << 10): \(command): status \(result.status), \(result.stderr)"
                    #expect(result.terminationReason == .exit, "\(context)")
                    #expect(result.status != 124 && result.status < 128, "not hung, not killed: \(context)")
                    if result.status == 0 {
                        succeeded += 1
                        if command.contains("extract") {
                            #expect(
                                try tree.read("out/t/d1/f5.txt") == Array(String(repeating: "line 5 of text\n", count: 400).utf8),
                                "\(context)")
                        }
                        continue
                    }
                    // The limit was too small to load the program, for the shell or the loader.
                    if !result.stderr.hasPrefix("amk: ") { continue }
                    refused += 1
                    #expect(result.status == 1, "\(context)")
                    #expect(
                        result.stderr.contains("ulimit -v") || result.stderr.contains("of memory to decode"),
                        "the message names the limit: \(context)")
                }
            }
            #expect(succeeded >= 8, "the larger limits run everything")
            #expect(refused >= 4, "some limits were refused with amk's message")
        }

        /// A sound archive whose block needs more decoder memory than the limit leaves (a 192 MiB
        /// dictionary, xz's own choice at `-9e --lzma2=dict=192MiB`) is refused saying the limit is
        /// why, from a file and from a pipe: "block needs ... bytes of memory to decode" read as
        /// damage.
        @Test(.enabled(if: ChildProcess.lookUp("xz") != nil, "needs xz"))
        func aDecoderRefusedMemoryUnderTheLimitNamesTheLimit() throws {
            let made = try ShellPipeline.run(
                "head -c 200000 /dev/urandom > r && tar -cf - r | xz -T1 --lzma2=dict=192MiB > big.tar.xz", in: tree.url("."))
            try #require(made.status == 0, "\(made.stderr)")
            for command in [
                "\"$AMK\" verify big.tar.xz", "\"$AMK\" extract big.tar.xz -C out", "sh -c 'cat big.tar.xz | \"$AMK\" extract - -C out'"
            ] {
                let result = try underLimit(300 << 10, command)
                #expect(result.status == 1, "\(command): \(result.stderr)")
                #expect(
                    (result.stderr.contains("of memory to decode") || result.stderr.contains("the memory limit"))
                        && result.stderr.contains("ulimit -v 307200 KiB")
                        && result.stderr.contains("the archive is not damaged"), "\(command): \(result.stderr)")
                #expect(!result.stderr.contains("salvage"), "\(command): \(result.stderr)")
            }
        }

        /// A pack whose one encoder cannot fit what the limit leaves is refused before it starts,
        /// naming the limit and what a worker needs, and writes nothing; at a small preset the same
        /// limit packs, and the archive lists.
        @Test func aPackTooLargeForTheLimitIsRefusedAndASmallerOneRuns() throws {
            let big = try underLimit(640 << 10, "\"$AMK\" pack --preset 9 --chunk-size 64M src/t -o big.tar.xz")
            #expect(big.status == 1, "\(big.stderr)")
            #expect(big.stderr.contains("the address-space limit (ulimit -v) of 640.0 MiB leaves"), "\(big.stderr)")
            #expect(big.stderr.contains("cannot hold one worker"), "\(big.stderr)")
            #expect(!tree.exists("big.tar.xz"))
            let small = try underLimit(640 << 10, "\"$AMK\" pack --preset 1 src/t -o small.tar.xz")
            #expect(small.status == 0, "\(small.stderr)")
            let listed = try AMKProcess.run(["list", tree.path("small.tar.xz")])
            #expect(listed.status == 0 && listed.stdout.contains("t/d3/f39.txt"), "\(listed.stdout)\(listed.stderr)")
        }
    }
}
