import ArgumentParser
import Foundation

/// `amk _stall` (hidden, for tests): work that ignores cancellation, the way a system call that
/// does not return would, run under ``SignalCancellation`` like every command's work.
///
/// Tests send it a signal to check that the first SIGINT or SIGTERM ends the process within
/// ``SignalCancellation/gracePeriod`` even when the work cannot be made to stop.
struct StallCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "_stall",
        abstract: "Work that ignores cancellation for a while (for tests of signal handling).",
        shouldDisplay: false
    )

    @Option(help: "How long the work takes.")
    var seconds: Double = 60

    func run() async throws {
        let seconds = self.seconds
        print("stalling")
        fflush(nil)  // the test waits for this line before it sends the signal
        try await SignalCancellation.run {
            // On a thread of its own, so the cooperative pool stays free for the signal watcher.
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                Thread {
                    Thread.sleep(forTimeInterval: seconds)
                    continuation.resume()
                }.start()
            }
        }
        print("done")
    }
}
