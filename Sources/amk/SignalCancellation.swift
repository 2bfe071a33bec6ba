import Dispatch
import IndexedArchive

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Turns SIGINT and SIGTERM into structured cancellation of the work in progress.
///
/// The default action of both signals kills the process on the spot, and a pack killed that way
/// would skip the engine's cleanup (on systems without `O_TMPFILE` it leaves a hidden temporary
/// file). So the default action is replaced by `SIG_IGN` and the signals are observed through
/// dispatch sources instead; a signal ends a race in a task group between the work and a watcher,
/// the group cancels the work, and waits for it to unwind before ``run(_:)`` throws
/// ``InterruptedError``. A second signal while that cleanup runs exits at once.
///
/// Work that does not heed the cancellation (stuck in a system call that never returns, as
/// opening a FIFO once was) would otherwise make the first signal useless: a service manager's
/// SIGTERM would be ignored until its SIGKILL. So the first signal also starts a deadline: if the
/// work has not unwound within ``gracePeriod``, the process exits as after a second signal.
enum SignalCancellation {
    /// The signals that cancel the work: Ctrl-C, a service manager's stop, and SIGHUP, which a
    /// closed terminal or a dropped ssh session sends (its default action killed amk mid-file,
    /// leaving the member cut short or a temporary beside the file it replaced).
    static let signals: [Int32] = [SIGINT, SIGTERM, SIGHUP]

    /// How long the work may take to unwind after the first signal before the process exits
    /// without it. Cancelled work normally stops within a fraction of a second; this is well
    /// under the ten seconds a container runtime waits before its SIGKILL.
    static let gracePeriod: DispatchTimeInterval = .seconds(5)

    /// A second signal this soon after the first is taken as the same interruption, not as the
    /// user insisting.
    static let sameInterruption: Duration = .seconds(1)

    /// Exits without unwinding, first removing the files extractions were writing: otherwise one
    /// would stay cut short under its own name, or as a temporary beside the file it was to replace.
    static func exitNow() -> Never {
        UnfinishedFiles.removeAll()
        StandardError.line("amk: interrupted")
        _exit(1)
    }

    /// Which child of the race finished first.
    private enum Outcome<Value: Sendable>: Sendable {
        case finished(Value)
        /// The watcher's stream ended without a signal: only happens once the group cancels it.
        case watcherStopped
    }

    /// Runs `operation`, cancelling it when SIGINT or SIGTERM arrives.
    ///
    /// - Returns: what `operation` returned, if it finished first.
    /// - Throws: ``InterruptedError`` after a signal (once `operation` has returned or thrown in
    ///   response to its cancellation), or whatever `operation` threw.
    static func run<Value: Sendable>(_ operation: @escaping @Sendable () async throws -> Value) async throws -> Value {
        let (stream, continuation) = AsyncStream<Int32>.makeStream(bufferingPolicy: .bufferingNewest(4))
        let received = SignalCounter()
        let deadline = DispatchWorkItem {
            // The work did not unwind in time: it is stuck where cancellation cannot reach it.
            exitNow()
        }
        var sources: [any DispatchSourceSignal] = []
        for number in signals {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                let (count, sinceFirst) = received.increment()
                // GNU `timeout` and a terminal's Ctrl-C reach amk both directly and through its
                // process group: a second signal within moments of the first is the same request.
                if count > 1, sinceFirst < sameInterruption {
                    return
                }
                if count > 1 {
                    // The user insists: the cleanup of the first signal is taking too long.
                    exitNow()
                }
                DispatchQueue.global().asyncAfter(deadline: .now() + gracePeriod, execute: deadline)
                continuation.yield(number)
            }
            source.resume()
            sources.append(source)
        }
        defer {
            // The work has returned: whatever the command does next is not subject to the deadline.
            deadline.cancel()
            continuation.finish()
            for source in sources { source.cancel() }
            // After an interruption the process is on its way out with status 1 and its message:
            // a second Ctrl-C in that moment (a key held down, a supervisor's repeat) must not
            // kill it by the signal instead, so the signals stay ignored until it exits.
            if received.count == 0 {
                for number in signals { signal(number, SIG_DFL) }
            }
        }
        return try await withThrowingTaskGroup(of: Outcome<Value>.self) { group in
            group.addTask { .finished(try await operation()) }
            group.addTask {
                for await number in stream { throw InterruptedError(signal: number) }
                return .watcherStopped
            }
            // Whichever child ends first decides; the other is cancelled, and the group waits for
            // it before returning, so the work has cleaned up by the time this function returns.
            defer { group.cancelAll() }
            while let outcome = try await group.next() {
                switch outcome {
                case .finished(let value): return value
                case .watcherStopped: continue
                }
            }
            // Both children returned without a value: only possible if the watcher stopped and
            // the work neither returned nor threw, which cannot happen.
            preconditionFailure("the work ended without a result")
        }
    }
}
