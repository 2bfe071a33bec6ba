import Foundation

/// What this process holds right now, read from `/proc/self`: descriptors, threads, resident memory.
enum ProcessProbe {
    /// The open descriptors, each with what it points to (`readlink` of `/proc/self/fd/N`).
    /// The descriptor used to list the directory is left out.
    static func descriptors() -> [(fd: Int32, target: String)] {
        guard let dir = opendir("/proc/self/fd") else { return [] }
        defer { closedir(dir) }
        let own = dirfd(dir)
        var result: [(Int32, String)] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard let fd = Int32(name), fd != own else { continue }
            var buffer = [CChar](repeating: 0, count: 4096)
            let n = readlink("/proc/self/fd/\(fd)", &buffer, buffer.count - 1)
            let target = n > 0 ? String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) : "?"
            result.append((fd, target))
        }
        return result.sorted { $0.0 < $1.0 }
    }

    /// The descriptors a leak check counts: all but sockets. The engine and the host's packs,
    /// extractions and imports open none, and the transfer suites, which run beside the stress
    /// suites in the same process, open and close dozens at their own pace (measured: ten
    /// paired transfers with wrong codes and silent connections end with as many descriptors as
    /// they began with), which made the whole-process count swing by ten.
    static func descriptorCount() -> Int { descriptors().filter { !$0.target.hasPrefix("socket:") }.count }

    /// Descriptors that point at or under `directory`: a file, a directory, or an unnamed
    /// `O_TMPFILE` there (shown as `directory/#inode (deleted)`). Only the run that owns the
    /// directory can have opened them, whatever else the process is doing meanwhile.
    static func descriptors(under directory: String) -> [String] {
        descriptors().map(\.target).filter { $0 == directory || $0.hasPrefix(directory + "/") }
    }

    static func threadCount() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? 0
    }

    /// VmRSS, in bytes.
    static func residentBytes() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if fields.count >= 2, let kib = Int(fields[1]) { return kib * 1024 }
        }
        return 0
    }

    static func mebibytes(_ bytes: Int) -> String { String(format: "%.1f MiB", Double(bytes) / 1_048_576) }
}

/// Watches the process across many runs: descriptors, threads and memory must come back to where
/// they were after a few warm-up runs, not grow run after run.
struct ResourceTracker {
    struct Sample {
        var descriptors: Int
        var threads: Int
        var resident: Int
    }

    private(set) var baseline: Sample?
    private(set) var samples: [Sample] = []

    static func sample() -> Sample {
        Sample(
            descriptors: ProcessProbe.descriptorCount(), threads: ProcessProbe.threadCount(),
            resident: ProcessProbe.residentBytes())
    }

    /// A sample once transient descriptors and threads have gone: the smallest of a few taken
    /// over about `settle`, since other threads of the process may open and close things meanwhile.
    static func settledSample(settle: Duration = .milliseconds(150)) async throws -> Sample {
        var best = sample()
        for _ in 0..<5 {
            try await Task.sleep(for: settle / 5)
            let next = sample()
            best.descriptors = min(best.descriptors, next.descriptors)
            best.threads = min(best.threads, next.threads)
            best.resident = next.resident
        }
        return best
    }

    mutating func setBaseline(_ sample: Sample) { baseline = sample }

    mutating func record(_ sample: Sample) { samples.append(sample) }

    var peakResident: Int { samples.map(\.resident).max() ?? 0 }

    /// Resident memory of the last quarter of the runs against the first quarter, in bytes.
    var residentGrowth: Int {
        guard samples.count >= 4 else { return 0 }
        let quarter = max(1, samples.count / 4)
        let first = samples.prefix(quarter).map(\.resident).max() ?? 0
        let last = samples.suffix(quarter).map(\.resident).min() ?? 0
        return last - first
    }

    func summary(label: String) -> String {
        guard let baseline, let last = samples.last else { return "STRESS: \(label): no samples" }
        return "STRESS: \(label): runs=\(samples.count) fds baseline=\(baseline.descriptors) final=\(last.descriptors) "
            + "max=\(samples.map(\.descriptors).max() ?? 0) threads baseline=\(baseline.threads) final=\(last.threads) "
            + "max=\(samples.map(\.threads).max() ?? 0) rss baseline=\(ProcessProbe.mebibytes(baseline.resident)) "
            + "final=\(ProcessProbe.mebibytes(last.resident)) peak=\(ProcessProbe.mebibytes(peakResident)) "
            + "growth(last quarter - first quarter)=\(ProcessProbe.mebibytes(residentGrowth))"
    }
}
