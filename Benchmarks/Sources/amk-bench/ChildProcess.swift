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
/// `posix_spawn` and reaped with `wait4`, which returns the usage of exactly that child and of
/// the processes it waited for: the whole pipeline behind `/bin/sh -c`. Every tool, ours included
/// (re-executed as a child of this binary), is measured this way, so their figures compare.
enum ChildProcess {
    /// Runs `command` with `/bin/sh -c`: stdin from /dev/null, stdout and stderr to the given files.
    static func run(_ command: String, stdout: String = "/dev/null", stderr: String = "/dev/null",
                    environment: [String: String] = [:]) throws -> ProcessUsage {
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

        let words: [String] = ["/bin/sh", "-c", command]
        let arguments: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
        var merged = ProcessInfo.processInfo.environment
        merged.merge(environment) { _, new in new }
        let variables: [UnsafeMutablePointer<CChar>?] = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            arguments.forEach { free($0) }
            variables.forEach { free($0) }
        }

        var pid: pid_t = 0
        let start = ContinuousClock.now
        let spawned = posix_spawn(&pid, "/bin/sh", &actions, nil, arguments, variables)
        guard spawned == 0 else {
            throw BenchError("cannot start /bin/sh: \(String(cString: strerror(spawned)))")
        }
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 {
            guard errno == EINTR else { throw BenchError("wait4 failed: \(String(cString: strerror(errno)))") }
        }
        let wall = (ContinuousClock.now - start).seconds
        #if os(Linux)
        let rssBytes = Int(usage.ru_maxrss) * 1024 // kilobytes on Linux
        #else
        let rssBytes = Int(usage.ru_maxrss) // bytes on Darwin
        #endif
        let signal = status & 0x7f
        return ProcessUsage(
            wallSeconds: wall,
            userSeconds: seconds(usage.ru_utime),
            systemSeconds: seconds(usage.ru_stime),
            peakRSSBytes: rssBytes,
            exitStatus: signal == 0 ? (status >> 8) & 0xff : 128 + signal)
    }

    private static func seconds(_ time: timeval) -> Double {
        Double(time.tv_sec) + Double(time.tv_usec) / 1e6
    }
}
