import Foundation
import IndexedArchive
import TestSupport
import Testing

extension StressTests {
    /// DESIGN §3: opening an archive (reading its end, decoding a 100,000-member index) and
    /// extracting a selection of it run on threads of our own, so Swift's cooperative pool keeps
    /// running tasks on time meanwhile.
    @Suite struct ReaderPoolLag {
        static let files = 100_000
        static let selected = 100
        /// A run whose pool lagged this much at p99 was starved. Decoding the index alone takes
        /// hundreds of ms, which a reader doing it on the pool would add to the lag; two cores
        /// shared with the suites beside (amk runs of 120,000 members among them) added 21 to
        /// 36 ms in every run, which the 20 ms this once was could not tell from a blocked pool.
        static let starvedLag: Duration = .milliseconds(60)

        /// 100,000 files in 100 directories, all empty but every 1,000th, which holds 2 KiB.
        static func makeTree(in root: String) throws {
            for directory in 0..<(files / 1000) {
                let path = root + "/d\(directory)"
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
                for file in 0..<1000 {
                    let fd = open(path + "/f\(file)", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
                    guard fd >= 0 else { throw ArchiveError(.io(errno: errno), "create failed", path: path + "/f\(file)") }
                    if file == 0 {
                        let bytes = textBytes(count: 2048, seed: UInt64(directory))
                        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                    }
                    close(fd)
                }
            }
        }

        @Test func openingAndExtractingFromAHundredThousandMembersLeavesThePoolOnTime() async throws {
            let scratch = try TemporaryDirectory(prefix: "amk-stress-reader-lag")
            let source = try scratch.subdirectory("app")
            let archive = scratch.path + "/app.tar.xz"
            try await Task.detached { try Self.makeTree(in: source) }.value
            var options = PackOptions()
            options.preset = 0
            _ = try await ArchivePacker.pack([PackSource(path: source)], to: .file(archive), options: options)
            var extract = ExtractOptions()
            extract.members = Set((0..<Self.selected).map { "app/d\($0)/f0" })
            let selection = extract

            // As many readers at once as the pool has threads: a reader that blocked one of them
            // while opening or writing would then leave no thread for the probe.
            let readers = max(2, ProcessInfo.processInfo.activeProcessorCount)
            let runs = 3
            var starved = 0
            var report: [String] = []
            _ = try await PoolLagProbe.waitUntilQuiet()
            for run in 0..<runs {
                let probe = PoolLagProbe()
                probe.start()
                let started = ContinuousClock.now
                try await withThrowingTaskGroup(of: ExtractSummary.self) { group in
                    for index in 0..<readers {
                        let destination = try scratch.subdirectory("out-\(run)-\(index)")
                        group.addTask {
                            let reader = try await ArchiveReader.open(path: archive)
                            return try await reader.extract(to: destination, options: selection)
                        }
                    }
                    for try await summary in group {
                        #expect(summary.entries >= Self.selected, "the selection and its directories are extracted")
                    }
                }
                let elapsed = ContinuousClock.now - started
                _ = probe.stop()
                let lags = probe.lags
                let p99 = percentile(lags, 0.99)
                if p99 >= Self.starvedLag { starved += 1 }
                report.append(
                    "run \(run): \(readers) readers in \(elapsed.formatted), pool lag p99 \(p99.formatted) max \((lags.last ?? .zero).formatted) over \(lags.count) wake-ups"
                )
            }
            let sample = try String(contentsOfFile: scratch.path + "/out-0-0/app/d7/f0", encoding: .utf8)
            #expect(Array(sample.utf8) == textBytes(count: 2048, seed: 7))
            print("STRESS: reader pool lag: " + report.joined(separator: "; "))
            // A starved machine (other suites blocking the pool) is told apart from a reader that
            // blocks it: the reader would lag every run.
            #expect(
                PoolLagProbe.tolerated(starved, of: runs) && starved < runs,
                "the cooperative pool lagged \(Self.starvedLag.formatted) or more at p99 in \(starved) of \(runs) runs: \(report)")
        }
    }
}
