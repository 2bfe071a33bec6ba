import Foundation
import IndexedArchive
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The host's side of a conversation with one extension process (see ``ExtensionProtocol``).
///
/// ``run(_:name:container:gracePeriod:watchdog:_:)`` starts the process, checks its hello, lets
/// the caller talk to it, and returns or throws only after the process and everything in its
/// process group are gone and reaped: nothing the extension does can happen after the host
/// answers, clears or unlocks the container.
///
/// When the calling task is cancelled (by the watchdog, on a stall, or by the caller) the ladder
/// runs: the `cancel` message, half the grace period to report, SIGTERM to the group, the rest of
/// the grace period to exit, then SIGKILL to the group.
///
/// `Sendable`: the process and the thread pool are.
struct ExtensionSession: Sendable {
    let process: ExtensionProcess
    let hello: ExtensionHello
    /// The executable, for errors.
    let path: String
    let gracePeriod: Duration
    private let pool: WorkerThreadPool

    /// What the host allows itself past the grace period to kill and reap a process: the
    /// watchdog's own last resort (answering without waiting) comes this much later, so that it
    /// never answers before the process is reaped.
    static let reapAllowance: Duration = .seconds(10)

    /// The extension's own report that its work threw.
    struct ReportedFailure: Error {
        var message: String
        var cancelled: Bool
    }

    /// Runs `body` with a session to a new process of `executable`; see the type's description.
    static func run<T: Sendable>(
        _ executable: ExtensionExecutable, name: String, container: MigrationDataContainer,
        gracePeriod: Duration, watchdog: Watchdog?,
        _ body: (ExtensionSession) async throws -> T
    ) async throws -> T {
        let pool = WorkerThreadPool(threads: 1, name: "amk-extension")
        defer { pool.shutdown() }
        let process = try await blocking(pool) { try ExtensionProcess.spawn(executable, name: name, container: container) }
        do {
            // Saying hello is the extension's first work: a process that never does (a wrong
            // executable that sleeps, one stuck in its start-up) stalls like one stuck anywhere
            // else, instead of holding the host for good.
            watchdog?.begin(PipelineStage.extensionCode)
            let hello: ExtensionHello
            do {
                hello = try await waitOnThread(pool) { try process.channel.receiveHello(within: .milliseconds(50)) }
                watchdog?.end(PipelineStage.extensionCode)
            } catch {
                watchdog?.end(PipelineStage.extensionCode)
                throw error
            }
            guard hello.version == ExtensionProtocol.version else {
                throw AppMigrationError(
                    .extensionProcessFailed,
                    "it speaks version \(hello.version) of the extension protocol; this host speaks version \(ExtensionProtocol.version)",
                    extensionName: name, path: executable.path)
            }
            let session = ExtensionSession(process: process, hello: hello, path: executable.path, gracePeriod: gracePeriod, pool: pool)
            let value = try await body(session)
            try await session.awaitCleanExit()
            // Cancelled while the extension was finishing: it was never told, so it ignored
            // nothing, and the call is cancelled all the same (the conclusion below finds the
            // process exited and says so with CancellationError).
            try Task.checkCancellation()
            return value
        } catch {
            throw await conclude(
                process, after: error, name: name, path: executable.path, gracePeriod: gracePeriod, watchdog: watchdog, pool: pool)
        }
    }

    /// The answer after `error` ended the conversation, once the process is reaped.
    private static func conclude(
        _ process: ExtensionProcess, after error: any Error, name: String, path: String, gracePeriod: Duration,
        watchdog: Watchdog?, pool: WorkerThreadPool
    ) async -> any Error {
        if Task.isCancelled {
            return await ladder(process, name: name, path: path, gracePeriod: gracePeriod, watchdog: watchdog, pool: pool)
        }
        let failed = { (message: String) in AppMigrationError(.extensionProcessFailed, message, extensionName: name, path: path) }
        switch error {
        case let failure as ExtensionChannel.Failure:
            switch failure {
            case .closed(let offset, let reason):
                // A crash closes the channel: wait a moment for the exit, to say how it ended.
                let ended = await blocking(pool) { process.finish(waitingUpTo: min(gracePeriod, .seconds(2))) }
                return failed("\(reason) at byte \(offset) of the protocol, before it reported a result; \(ended)")
            case .notProtocol(let offset, let reason):
                _ = await blocking(pool) { process.finish(waitingUpTo: .zero) }
                return failed("it sent bytes that are not the extension protocol at byte \(offset): \(reason); the host killed it")
            case .tooLarge(let offset, let bytes):
                _ = await blocking(pool) { process.finish(waitingUpTo: .zero) }
                return failed(
                    "it sent a message of \(bytes) bytes at byte \(offset) of the protocol; the limit is "
                        + "\(ExtensionProtocol.maxMessageBytes); the host killed it")
            }
        case let reported as ReportedFailure:
            let ended = await blocking(pool) { process.finish(waitingUpTo: gracePeriod) }
            var message = "failed: \(reported.message)"
            if ended.leftBehind > 0 || ended.killed { message += "; then \(ended)" }
            return AppMigrationError(.extensionFailed, message, extensionName: name, path: nil)
        default:
            _ = await blocking(pool) { process.finish(waitingUpTo: .zero) }
            return error
        }
    }

    /// Cancel, wait, SIGTERM, wait, SIGKILL; the verdict once the process is reaped.
    private static func ladder(
        _ process: ExtensionProcess, name: String, path: String, gracePeriod: Duration, watchdog: Watchdog?,
        pool: WorkerThreadPool
    ) async -> any Error {
        let report = await blocking(pool) { () -> ExtensionMessage? in
            let start = ContinuousClock.now
            try? process.channel.send(ExtensionMessage.cancel, timeout: .milliseconds(100))
            while ContinuousClock.now - start < gracePeriod / 2 {
                do {
                    switch try process.channel.receive(within: .milliseconds(20)) {
                    case .finished?: return .finished
                    case .failed(let message, let cancelled)?: return .failed(message: message, cancelled: cancelled)
                    default: break
                    }
                    // cancellation: no Swift task runs here; the channel's own failures end the wait
                } catch {
                    // The channel closed or broke: the process is on its way out, or ignores us.
                    // Give it the same time to exit: a SIGTERM now would make an extension that
                    // was stopping as asked look like one that had to be killed.
                    while ContinuousClock.now - start < gracePeriod / 2 && !process.hasExited { usleep(5_000) }
                    break
                }
                if process.hasExited { break }
            }
            return nil
        }
        let ended = await blocking(pool) { () -> ExtensionTermination in
            if report == nil && !process.hasExited { process.signalGroup(SIGTERM) }
            return process.finish(waitingUpTo: gracePeriod / 2)
        }
        let stall = watchdog?.stall.map { " (after it \($0))" } ?? ""
        switch report {
        case .failed?:
            if !ended.killed && ended.leftBehind == 0 { return CancellationError() }
            return ArchiveError(.terminated, "terminated: cancellation ignored: it reported that it stopped\(stall), but \(ended)")
        case .finished?:
            // Its work ended as the cancel came, and the process with it: it did stop, and what
            // it finished is not used (an export's archive is not committed, an import is
            // undone). The caller asked for a cancellation; that is its answer.
            if !ended.killed && ended.leftBehind == 0 { return CancellationError() }
            return ArchiveError(
                .terminated, "terminated: cancellation ignored: returned normally after being cancelled\(stall), but \(ended)")
        case nil where !ended.killed && ended.exitStatus != nil && ended.leftBehind == 0:
            // It exited by itself once cancelled, without a report: it stopped.
            return CancellationError()
        default:
            return ArchiveError(
                .terminated,
                "terminated: cancellation ignored: it did not stop within \(StallReport.format(gracePeriod)) of being cancelled"
                    + "\(stall); \(ended)")
        }
    }

    /// After the extension reported success: waits (up to the grace period) for it to exit,
    /// kills and reaps its group, and throws unless it exited with status 0 leaving nothing
    /// running. An export calls it before its archive is committed, so that a process that
    /// crashes or leaves a worker behind after its report delivers no archive.
    func awaitCleanExit() async throws {
        let process = process
        let gracePeriod = gracePeriod
        let ended = await Self.blocking(pool) { process.finish(waitingUpTo: gracePeriod) }
        guard ended.isClean else {
            throw AppMigrationError(.extensionProcessFailed, "it reported success, but \(ended)", extensionName: process.name, path: path)
        }
    }

    // MARK: - Talking

    /// Sends a message to the extension: at once if the socket has room (it nearly always has:
    /// the extension's reader drains it), else from the session's thread, which may wait.
    func send(_ message: ExtensionMessage) async throws {
        let channel = process.channel
        if try channel.sendNow(message) { return }
        try await pool.run { _ in try channel.send(message) }
    }

    /// The next message from the extension; `CancellationError` when the calling task is cancelled.
    ///
    /// One that has arrived is taken at once; only waiting goes to the session's thread. A round
    /// trip per `appendItem` then costs no thread hop on the host's side while the extension
    /// keeps it busy, which matters when the compressors hold every core.
    ///
    /// With `heartbeat`, heartbeats are not returned: each is handed to it on the session's
    /// thread as soon as it is read, and the next other message is returned. An import's signs
    /// of life so reach the watchdog whatever holds Swift's cooperative pool (see
    /// ``runImport(staging:request:watchdog:progress:progressRange:)``).
    func next(heartbeat: (@Sendable (_ cpu: Int64, _ completed: Int64, _ total: Int64) -> Void)? = nil) async throws
        -> ExtensionMessage
    {
        try Task.checkCancellation()
        let channel = process.channel
        /// The message to return, or nil for a heartbeat that `heartbeat` took.
        let pass: @Sendable (ExtensionMessage) -> ExtensionMessage? = { message in
            guard let heartbeat, case .heartbeat(let cpu, let completed, let total) = message else { return message }
            heartbeat(cpu, completed, total)
            return nil
        }
        while let message = try channel.receiveNow() {
            if let message = pass(message) { return message }
        }
        let process = process
        return try await pool.run { flag in
            var exitedAt: ContinuousClock.Instant?
            while true {
                if flag.isCancelled { throw CancellationError() }
                if let message = try channel.receive(within: .milliseconds(50)) {
                    if let message = pass(message) { return message }
                    continue
                }
                // Its exit closes its end of the channel, unless a process it started holds a
                // copy: then no report can come, and waiting for one took the whole stall
                // timeout (ten minutes for an import) and was called a stall. What it sent
                // before exiting has had half a second to be read.
                if exitedAt == nil && process.hasExited { exitedAt = .now }
                if let exitedAt, ContinuousClock.now - exitedAt >= .milliseconds(500) {
                    throw ExtensionChannel.Failure.closed(
                        offset: channel.bytesReceived, reason: "it exited while a process it started still held the channel open")
                }
            }
        }
    }

    /// Repeats `attempt` (a wait of at most 50 ms) on the session's thread until it gives a value,
    /// or throws `CancellationError` once the calling task is cancelled.
    private static func waitOnThread<R: Sendable>(
        _ pool: WorkerThreadPool, _ attempt: @escaping @Sendable () throws -> R?
    ) async throws -> R {
        try await pool.run { flag in
            while true {
                if flag.isCancelled { throw CancellationError() }
                if let value = try attempt() { return value }
            }
        }
    }

    /// An error for a message that has no place in the conversation now.
    func unexpected(_ message: ExtensionMessage, during what: String) -> AppMigrationError {
        AppMigrationError(
            .extensionProcessFailed,
            "it sent a '\(message.kind)' message during \(what), which the extension protocol does not allow there; the host killed it",
            extensionName: process.name)
    }

    /// Starts an export and returns the properties the extension sends first. While it computes
    /// them (a size estimate may walk the whole container), each millisecond of CPU time its
    /// heartbeats report is a sign of life for `watchdog`, as during an import.
    func startExport(destinationPlatform: MigrationPlatform, options: [String: Data], watchdog: Watchdog? = nil) async throws -> (
        sizeEstimate: Int, version: String, compressible: Bool
    ) {
        guard hello.exports else {
            throw AppMigrationError(.unsupportedExtension, "it does not export (its hello says so)", extensionName: process.name)
        }
        try await send(.export(destinationPlatform: destinationPlatform.rawValue, options: options))
        let seen = Mutex(ImportSignsOfLife())
        let heartbeat: @Sendable (Int64, Int64, Int64) -> Void = { cpu, _, _ in
            if seen.withLock({ $0.see(cpu: cpu, completed: 0).working }) { watchdog?.beat(PipelineStage.extensionCode) }
        }
        while true {
            switch try await next(heartbeat: heartbeat) {
            case .properties(let estimate, let version, let compressible): return (estimate, version, compressible)
            case .failed(let message, let cancelled): throw ReportedFailure(message: message, cancelled: cancelled)
            case let other: throw unexpected(other, during: "the start of an export")
            }
        }
    }

    /// Serves the extension's appends into `archiver` until it reports its result.
    func serveAppends(into archiver: ResourcesArchiver) async throws {
        while true {
            switch try await next() {
            case .append(let id, let path, let pathInArchive):
                var refusal: AppMigrationError?
                do {
                    try await archiver.appendItem(at: URL(filePath: path), pathInArchive: pathInArchive)
                } catch let error as AppMigrationError {
                    refusal = error
                } catch let error as CancellationError {
                    throw error
                    // cancellation: the clause above rethrows it; this one answers the extension
                } catch {
                    refusal = AppMigrationError(.itemUnreadable, "\(error)", extensionName: process.name, underlying: error)
                }
                try await send(.appended(id: id, error: refusal.map { "\($0.description)" }, code: refusal?.codeName))
            case .heartbeat: continue
            case .finished: return
            case .failed(let message, let cancelled): throw ReportedFailure(message: message, cancelled: cancelled)
            case let other: throw unexpected(other, during: "an export")
            }
        }
    }

    /// Runs the import of `staging` and follows it until the extension reports its result: each
    /// advance of its progress and each millisecond of CPU time its code uses is a heartbeat for
    /// `watchdog`; its progress is mirrored into `progress` between `progressRange`'s bounds.
    func runImport(
        staging: URL, request: ResourcesImportRequest, watchdog: Watchdog?, progress: Progress?, progressRange: (Int64, Int64)
    ) async throws {
        guard hello.imports else {
            throw AppMigrationError(.unsupportedExtension, "it does not import (its hello says so)", extensionName: process.name)
        }
        let source = request.sourceAppIdentifier
        try await send(
            .import(
                staging: staging.path(percentEncoded: false), sourceStore: source.storeIdentifier.rawValue,
                sourceBundle: source.bundleIdentifier, sourcePlatform: source.platform.rawValue, sourceVersion: request.sourceVersion))
        // Heartbeats are judged on the session's thread as they are read (see `next`).
        let seen = Mutex(ImportSignsOfLife())
        let heartbeat: @Sendable (Int64, Int64, Int64) -> Void = { cpu, completed, total in
            let (working, advanced) = seen.withLock { $0.see(cpu: cpu, completed: completed) }
            if working || advanced { watchdog?.beat(PipelineStage.extensionCode) }
            if advanced, let progress, total > 0 {
                let (low, high) = progressRange
                let fraction = min(max(Double(completed) / Double(total), 0), 1)
                progress.completedUnitCount = low + Int64(Double(high - low) * fraction)
            }
        }
        while true {
            switch try await next(heartbeat: heartbeat) {
            case .finished:
                // The last heartbeat may predate the end.
                progress?.completedUnitCount = progressRange.1
                return
            case .failed(let message, let cancelled): throw ReportedFailure(message: message, cancelled: cancelled)
            case let other: throw unexpected(other, during: "an import")
            }
        }
    }

    /// Runs `body` on the session's thread and waits for it, whether or not the task is
    /// cancelled: teardown is bounded by its own deadlines, never skipped.
    private static func blocking<R: Sendable>(_ pool: WorkerThreadPool, _ body: @escaping @Sendable () throws -> R) async throws -> R {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<R, any Error>) in
            pool.submit { continuation.resume(with: Result { try body() }) }
        }
    }

    private static func blocking<R: Sendable>(_ pool: WorkerThreadPool, _ body: @escaping @Sendable () -> R) async -> R {
        await withCheckedContinuation { (continuation: CheckedContinuation<R, Never>) in
            pool.submit { continuation.resume(returning: body()) }
        }
    }
}
