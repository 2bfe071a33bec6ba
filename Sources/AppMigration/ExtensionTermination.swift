import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// How an extension process ended.
struct ExtensionTermination: Sendable, Equatable, CustomStringConvertible {
    /// The raw status `waitpid` gave.
    var status: Int32
    /// Whether the host killed it (it had not exited by itself).
    var killed: Bool
    /// Processes of its group still running after it exited, which the host then killed.
    var leftBehind: Int

    /// Its exit status, if it exited.
    var exitStatus: Int32? { status & 0x7f == 0 ? (status >> 8) & 0xff : nil }
    /// The signal that ended it, if one did.
    var signal: Int32? { status & 0x7f != 0 && status & 0x7f != 0x7f ? status & 0x7f : nil }
    /// Exited by itself, with status 0, leaving nothing behind.
    var isClean: Bool { !killed && exitStatus == 0 && leftBehind == 0 }

    var description: String {
        if killed { return "the host killed its process group (SIGKILL)" }
        var text: String
        if let exitStatus {
            text = "it exited with status \(exitStatus)"
        } else if let signal {
            text = "it was killed by \(Self.signalName(signal))"
            switch signal {
            case SIGILL, SIGTRAP: text += " (a Swift runtime trap or an illegal instruction)"
            case SIGSEGV, SIGBUS: text += " (a crash: a bad memory access)"
            case SIGABRT: text += " (it aborted)"
            case SIGKILL: text += " (from outside the host: the system's OOM killer, or a user)"
            default: break
            }
        } else {
            text = "it ended with status \(status)"
        }
        if leftBehind > 0 {
            text += ", leaving \(leftBehind) process\(leftBehind == 1 ? "" : "es") of its group running (killed by the host)"
        }
        return text
    }

    /// `SIGSEGV (11)` and the like.
    static func signalName(_ signal: Int32) -> String {
        let names: [Int32: String] = [
            SIGHUP: "SIGHUP", SIGINT: "SIGINT", SIGQUIT: "SIGQUIT", SIGILL: "SIGILL", SIGTRAP: "SIGTRAP",
            SIGABRT: "SIGABRT", SIGBUS: "SIGBUS", SIGFPE: "SIGFPE", SIGKILL: "SIGKILL", SIGUSR1: "SIGUSR1",
            SIGSEGV: "SIGSEGV", SIGUSR2: "SIGUSR2", SIGPIPE: "SIGPIPE", SIGALRM: "SIGALRM", SIGTERM: "SIGTERM",
            SIGXCPU: "SIGXCPU", SIGXFSZ: "SIGXFSZ", SIGSYS: "SIGSYS"
        ]
        return "\(names[signal] ?? "signal") (\(signal))"
    }
}
