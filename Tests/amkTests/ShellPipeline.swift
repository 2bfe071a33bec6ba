import Foundation
import TestSupport

/// Runs a `/bin/sh` command line in which `$AMK` is the built binary: the pipes of issue 16
/// (`amk pack d -o - | amk list -`) are tested as a user types them.
enum ShellPipeline {
    static func run(_ command: String, in directory: URL) throws -> AMKProcess.Result {
        // -e and pipefail where the shell has it: a failing amk anywhere in the pipe fails the run.
        let script = "set -e; (set -o pipefail) 2>/dev/null && set -o pipefail; " + command
        return try AMKProcess.Result(
            ChildProcess.run("/bin/sh", ["-c", script], in: directory, environment: ["AMK": AMKProcess.binary]))
    }
}
