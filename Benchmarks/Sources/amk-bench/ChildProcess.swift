#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Runs one shell command as a child and measures it alone.
///
/// Foundation's `Process` reaps its children itself, which leaves nobody the `rusage` of that one
/// child; and `getrusage(RUSAGE_CHILDREN)` reports peak RSS as the maximum over every child ever
/// reaped, so after one large run every later figure would be wrong. So the child is started with
/// `posix_spawn` and reaped with `wait4`, which returns the wall and CPU time of exactly that
/// child and of the processes it waited for: the whole pipeline behind `/bin/sh -c`. Every tool,
/// ours included (re-executed as a child of this binary), is measured this way.
///
/// Peak RSS needs one more step. Linux carries a process's RSS high-water mark across `exec`, and
/// the mark a spawned child starts from is its parent's (`posix_spawn` shares the parent's memory
/// until the `exec`; a `fork` copies its page counts): measured directly, every tool would weigh
/// at least as much as this benchmark process. So the command runs under GNU time, a small C
/// program whose own children start from its few hundred KiB, and `%M` reports theirs. Without
/// GNU time the figure falls back to `wait4`'s, and ``rssMethod`` says so.
enum ChildProcess {
    /// GNU time, when installed: it measures peak RSS without our process's weight.
    private static let gnuTime: String? = {
        let path = "/usr/bin/time"
        guard FileManager.default.isExecutableFile(atPath: path) else { return nil }
        let out = "\(NSTemporaryDirectory())/amk-bench-time-probe-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: out) }
        // BSD time has no -f/-o; only GNU time writes a number here.
        guard let probe = try? spawn([path, "-f", "%M", "-o", out, "/bin/sh", "-c", "true"]), probe.status == 0,
              let text = try? String(contentsOfFile: out, encoding: .utf8),
              Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) != nil else { return nil }
        return path
    }()

    /// How peak RSS is measured, for the report's notes.
    static var rssMethod: String {
        gnuTime != nil
            ? "peak RSS: GNU time's %M for the command, the largest single process of the run"
            : "peak RSS: wait4's ru_maxrss (GNU time not installed: apt-get install time); it includes the "
                + "benchmark process's own RSS, which each child inherits as its starting high-water mark"
    }

    /// Runs `command` with `/bin/sh -c`: stdin from /dev/null, stdout and stderr to the given files.
    static func run(_ command: String, stdout: String = "/dev/null",
                    stderr: String = "/dev/null") throws -> ProcessUsage {
        var arguments = ["/bin/sh", "-c", command]
        let rssFile = "\(NSTemporaryDirectory())/amk-bench-rss-\(getpid())"
        if let gnuTime {
            arguments = [gnuTime, "-f", "%M", "-o", rssFile] + arguments
        }
        defer { if gnuTime != nil { try? FileManager.default.removeItem(atPath: rssFile) } }
        let result = try spawn(arguments, stdout: stdout, stderr: stderr)
        #if os(Linux)
        var rssBytes = Int(result.usage.ru_maxrss) * 1024 // kilobytes on Linux
        #else
        var rssBytes = Int(result.usage.ru_maxrss) // bytes on Darwin
        #endif
        // GNU time writes "Command exited with non-zero status N" before the figure on failure.
        if gnuTime != nil, let text = try? String(contentsOfFile: rssFile, encoding: .utf8),
           let last = text.split(separator: "\n").last,
           let kibibytes = Int(last.trimmingCharacters(in: .whitespaces)) {
            rssBytes = kibibytes * 1024
        }
        return ProcessUsage(
            wallSeconds: result.wall,
            userSeconds: seconds(result.usage.ru_utime),
            systemSeconds: seconds(result.usage.ru_stime),
            peakRSSBytes: rssBytes,
            exitStatus: result.status)
    }

    /// Spawns `arguments`, waits for it, and returns its exit status (128 + signal when killed),
    /// its `rusage` and the wall time from spawn to reaping.
    private static func spawn(_ arguments: [String], stdout: String = "/dev/null", stderr: String = "/dev/null")
        throws -> (status: Int32, usage: rusage, wall: Double) {
        #if canImport(Glibc)
        var actions = posix_spawn_file_actions_t()
        #else
        var actions: posix_spawn_file_actions_t?
        #endif
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_TRUNC, 0o644)

        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        let environment = ProcessInfo.processInfo.environment.map { "\($0.key)=\($0.value)" }
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup($0) } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }

        var pid: pid_t = 0
        let start = ContinuousClock.now
        let spawned = posix_spawn(&pid, arguments[0], &actions, nil, argv, envp)
        guard spawned == 0 else {
            throw BenchError("cannot start \(arguments[0]): \(String(cString: strerror(spawned)))")
        }
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 {
            guard errno == EINTR else { throw BenchError("wait4 failed: \(String(cString: strerror(errno)))") }
        }
        let wall = (ContinuousClock.now - start).seconds
        let signal = status & 0x7f
        return (signal == 0 ? (status >> 8) & 0xff : 128 + signal, usage, wall)
    }

    private static func seconds(_ time: timeval) -> Double {
        Double(time.tv_sec) + Double(time.tv_usec) / 1e6
    }
}
