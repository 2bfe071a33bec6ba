import Foundation
import Testing

extension AMKTests {
    /// `amk pack --stall-timeout`: the watchdog times each read, compression and write on its own,
    /// so a reader held back by a slow compressor is not a stalled reader.
    @Suite @MainActor struct PackStall {
        /// Letters, spaces and newlines from a xorshift: text that preset 9 compresses slowly.
        static func slowText(_ count: Int, seed: UInt64) -> [UInt8] {
            var out = [UInt8](repeating: 0, count: count)
            var x = seed | 1
            for i in 0..<count {
                x ^= x << 13
                x ^= x >> 7
                x ^= x << 17
                let r = Int(x % 32)
                out[i] = r < 26 ? UInt8(97 + r) : (r < 30 ? 32 : 10)
            }
            return out
        }

        @Test func aSlowPresetWithBigChunksIsNotAStall() throws {
            let tree = try TestTree()
            try tree.write("src/a.txt", Self.slowText(6 << 20, seed: 1))
            try tree.write("src/b.txt", Self.slowText(6 << 20, seed: 2))
            // One preset-9 job per 4 MiB chunk takes seconds, the reader waits for it each time,
            // and the timeout is one second: only the jobs' own silence may count.
            let result = try AMKProcess.run(
                [
                    "pack", tree.path("src"), "-o", tree.path("slow.tar.xz"), "--preset", "9",
                    "--jobs", "1", "--chunk-size", "4M", "--stall-timeout", "1"
                ])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(!result.stderr.contains("stalled"), "\(result.stderr)")
            let verify = try AMKProcess.run(["verify", tree.path("slow.tar.xz")])
            #expect(verify.status == 0, "\(verify.stderr)")
        }

        /// A pipe's reader that takes 64 KiB every 0.1 s (640 KiB/s): the writer is held back,
        /// which is not a stall. A whole 6 MiB block went out in one write, which returned only
        /// after nine seconds, and the pack failed as stalled after three.
        @Test func aSlowButSteadyReaderOfTheOutputIsNotAStall() throws {
            let tree = try TestTree()
            try tree.write("src/media.bin", TestTree.noise(count: 6 << 20, seed: 5))
            let reader = """
                import sys, time
                n = 0
                while True:
                    b = sys.stdin.buffer.read(65536)
                    if not b: break
                    n += len(b); time.sleep(0.1)
                print(n)
                """
            try tree.write("reader.py", reader)
            let result = try ShellPipeline.run(
                #"{ "$AMK" pack src -o - --preset 0 --chunk-size 8M --stall-timeout 3; echo $? > status; } | python3 reader.py"#,
                in: tree.root)
            let status = (try? String(contentsOfFile: tree.path("status"), encoding: .utf8)) ?? "none"
            #expect(status == "0\n", "\(status): \(result.stderr)")
            #expect(!result.stderr.contains("stalled"), "\(result.stderr)")
            #expect((Int(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) > 6 << 20, "\(result.stdout)")
        }

        @Test(arguments: ["0", "-1", "nan"])
        func aStallTimeoutMustBePositive(_ value: String) throws {
            let tree = try TestTree()
            try tree.write("src/a.txt", "a")
            let result = try AMKProcess.run(
                ["pack", tree.path("src"), "-o", tree.path("a.tar.xz"), "--stall-timeout", value])
            #expect(result.status == 2)
            #expect(result.stderr.contains("--stall-timeout"), "\(result.stderr)")
        }

        /// A timeout too large to count in milliseconds (1e18 s) trapped converting it; past the
        /// transfer timeouts' cap (1e9 s, about 31 years) it is a usage error, for export too.
        @Test(arguments: ["pack", "export"])
        func aStallTimeoutPastTheCapIsAUsageError(_ command: String) throws {
            let tree = try TestTree()
            try tree.write("src/a.txt", "a")
            let arguments =
                command == "pack"
                ? ["pack", tree.path("src"), "-o", tree.path("a.tar.xz")]
                : ["export", "--container", tree.path("src"), "-o", tree.path("a.tar.xz")]
            let result = try AMKProcess.run(arguments + ["--stall-timeout", "1e18"])
            #expect(result.status == 2, "\(result.stderr)")
            #expect(result.stderr.contains("--stall-timeout must be at most 1000000000 seconds"), "\(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: tree.path("a.tar.xz")))
        }
    }
}
