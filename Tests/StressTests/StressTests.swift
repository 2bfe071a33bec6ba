import Foundation
import IndexedArchive
import Testing

/// The stress suite: seeded random schedules of cancellations, stalls and I/O faults, cancel
/// latency, SIGKILL of a packing process, racing packs.
///
/// Serialized: its checks count the process's descriptors, threads and memory, which runs of its
/// own in parallel would blur. Runs and seeds come from `AMK_STRESS_RUNS` and `AMK_STRESS_SEED`
/// (see ``StressSettings``); a failing run's message says how to replay it.
@Suite(.serialized) struct StressTests {}

/// What every run checks once it is over, whatever its outcome.
enum Aftermath {
    /// Releases the run's stalls, waits for the fault sites to return, and checks that nothing
    /// of the run is left: no descriptor into `scratch`, no temporary file beside `destination`,
    /// and nothing at `destination` unless the pack succeeded.
    static func check(
        _ context: RunContext, injector: FaultInjector?, scratch: String, destination: String,
        succeeded: Bool
    ) async throws {
        injector?.release()
        if let injector, try await !injector.waitIdle(timeout: .seconds(5)) {
            context.fail("a fault site was still running 5 s after its stalls were released")
        }
        // An abandoned job closes its descriptor when it returns, a little after the release.
        let deadline = ContinuousClock.now + .seconds(2)
        var leaked = ProcessProbe.descriptors(under: scratch)
        while !leaked.isEmpty && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
            leaked = ProcessProbe.descriptors(under: scratch)
        }
        context.check(leaked.isEmpty, "descriptors left open after the run: \(leaked)")
        let directory = (destination as NSString).deletingLastPathComponent
        let temporaries = temporaryFiles(in: directory)
        context.check(temporaries.isEmpty, "temporary files left beside the destination: \(temporaries)")
        if !succeeded {
            context.check(!fileExists(destination), "a failed pack left a file at the destination \(destination)")
        }
    }

    /// Verifies the archive at `path` and extracts it; returns what it holds, or records why not.
    static func contents(of path: String, extractTo directory: String, _ context: RunContext) async -> TreeContents? {
        do {
            let reader = try ArchiveReader(path: path)
            _ = try await reader.verify()
            _ = try await reader.extract(to: directory)
            return try TreeContents(directory)
        } catch {
            context.fail("the archive at \(path) does not verify or extract: \(error)")
            return nil
        }
    }
}
