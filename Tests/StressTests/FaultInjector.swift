import Foundation
import IndexedArchive
import Synchronization

/// A latch that stalled calls wait on. Opening it releases every stall at once, so a stall "for
/// ever" (as far as the engine can tell) still ends when the test is done with it and leaves no
/// thread or descriptor behind to disturb the next run.
final class Gate: Sendable {
    private let condition = NSCondition()
    private let opened = Atomic<Bool>(false)

    /// Blocks the calling thread until the gate opens or `duration` passes (`nil`: until it opens).
    func wait(for duration: Duration?) {
        let deadline = duration.map { Date(timeIntervalSinceNow: $0.seconds) }
        condition.lock()
        defer { condition.unlock() }
        while !opened.load(ordering: .acquiring) {
            // (wait(until: .distantFuture) traps in swift-corelibs-foundation: wait without one.)
            guard let deadline else {
                condition.wait()
                continue
            }
            if !condition.wait(until: deadline) { return }
        }
    }

    func open() {
        condition.lock()
        opened.store(true, ordering: .releasing)
        condition.broadcast()
        condition.unlock()
    }
}

/// Cancels one task when a fault site (or the test) says so, and records when.
///
/// A site may fire before the task's handle is known; the cancellation then happens as soon as it
/// is armed.
final class CancelSwitch: Sendable {
    private struct State {
        var action: (@Sendable () -> Void)?
        var pending = false
        var firedAt: ContinuousClock.Instant?
    }

    private let state = Mutex(State())

    func arm(_ action: @escaping @Sendable () -> Void) {
        let fireNow = state.withLock { state -> Bool in
            state.action = action
            guard state.pending else { return false }
            state.pending = false
            state.firedAt = .now
            return true
        }
        if fireNow { action() }
    }

    /// Cancels now (once; later calls do nothing).
    func fire() {
        let action = state.withLock { state -> (@Sendable () -> Void)? in
            guard state.firedAt == nil, !state.pending else { return nil }
            guard let action = state.action else {
                state.pending = true
                return nil
            }
            state.firedAt = .now
            return action
        }
        action?()
    }

    /// Cancels after `delay`, from a thread of its own, so that whatever called is not held.
    func fire(after delay: Duration) {
        guard delay > .zero else { return fire() }
        DispatchQueue.global().asyncAfter(deadline: .now() + delay.seconds) { self.fire() }
    }

    var firedAt: ContinuousClock.Instant? { state.withLock { $0.firedAt } }
}

/// The error a compression hook throws when told to fail.
struct InjectedFault: Error, Equatable, CustomStringConvertible {
    var sequence: Int
    var description: String { "injected compression failure at block \(sequence)" }
}

/// The file-system calls a fault can be attached to.
enum FileCall: String, Sendable, CaseIterable {
    case lstat, readlink, listDirectory, open, fstat, read

    /// The watchdog stage that a stall in this call belongs to.
    var stage: String {
        switch self {
        case .lstat, .readlink, .listDirectory: return "enumerate"
        case .open, .fstat, .read: return "read"
        }
    }

    /// The operation named in the error, as the real file system names it.
    var operation: String {
        switch self {
        case .lstat, .fstat: return "stat"
        case .readlink: return "readlink"
        case .listDirectory, .open: return "open"
        case .read: return "read"
        }
    }
}

/// What happens when a fault fires.
enum FaultAction: Sendable {
    /// Blocks the thread, as a call stuck in the kernel would: for `duration`, or until the
    /// injector is released (`nil`).
    case stall(Duration?)
    /// Fails with this errno, as the real call would.
    case fail(errno: Int32)
    /// Every read returns at most this many bytes (reads only).
    case shortReads(max: Int)
    /// Cancels the pack, then lets the call proceed.
    case cancel(CancelSwitch, after: Duration)
}

/// Which calls a fault fires on.
struct FaultRule: Sendable {
    enum Match: Sendable {
        /// The n-th call of this kind (from 0), whatever its path.
        case nth(Int)
        /// The n-th call of this kind on this path.
        case path(String, nth: Int)
        /// Every call of this kind on this path.
        case every(String)
    }

    var call: FileCall
    var match: Match
    var action: FaultAction
}

/// What a compression hook does at one block.
struct CompressionFault: Sendable {
    enum Action: Sendable {
        case stall(Duration?)
        case fail
        case cancel(CancelSwitch, after: Duration)
    }

    var sequence: Int
    var action: Action
}

/// Builds the fault-injecting ``FileSystem`` and compression hook of one run, and observes them:
/// how many calls of each kind happened, when a stall began, whether calls are still in flight.
final class FaultInjector: Sendable {
    private struct State {
        var counts: [FileCall: Int] = [:]
        var pathCounts: [String: Int] = [:]
        var inFlight = 0
        var stallStartedAt: ContinuousClock.Instant?
        var fired = 0
        var compressions = 0
    }

    let rules: [FaultRule]
    let compressionFault: CompressionFault?
    /// Called on every file-system call with its kind, its path and its index among calls of its
    /// kind (before any fault applies); tests use it to count and to trigger.
    let observer: (@Sendable (FileCall, String, Int) -> Void)?
    let gate = Gate()
    private let state = Mutex(State())

    init(
        rules: [FaultRule] = [], compressionFault: CompressionFault? = nil,
        observer: (@Sendable (FileCall, String, Int) -> Void)? = nil
    ) {
        self.rules = rules
        self.compressionFault = compressionFault
        self.observer = observer
    }

    /// Releases every stall, now and to come.
    func release() { gate.open() }

    /// When the first stall began, if one did.
    var stallStartedAt: ContinuousClock.Instant? { state.withLock { $0.stallStartedAt } }
    /// How many faults fired.
    var firedCount: Int { state.withLock { $0.fired } }
    /// Calls of a kind seen so far.
    func count(_ call: FileCall) -> Int { state.withLock { $0.counts[call] ?? 0 } }
    /// Blocks that reached the compression hook.
    var compressionCount: Int { state.withLock { $0.compressions } }
    /// Calls (and hooks) still running, stalled ones included.
    var inFlight: Int { state.withLock { $0.inFlight } }

    /// Waits until no call is in flight; returns whether that happened within `timeout`.
    func waitIdle(timeout: Duration) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while inFlight > 0 {
            if ContinuousClock.now >= deadline { return false }
            try await Task.sleep(for: .milliseconds(5))
        }
        return true
    }

    // MARK: - The seams

    var fileSystem: FileSystem {
        let system = FileSystem.system
        return FileSystem(
            lstat: { path in try self.intercept(.lstat, path) { _ in try system.lstat(path) } },
            readlink: { path in try self.intercept(.readlink, path) { _ in try system.readlink(path) } },
            listDirectory: { path in try self.intercept(.listDirectory, path) { _ in try system.listDirectory(path) } },
            openForReading: { path in try self.intercept(.open, path) { _ in try system.openForReading(path) } },
            fstat: { fd, path in try self.intercept(.fstat, path) { _ in try system.fstat(fd, path) } },
            read: { fd, buffer, path in
                try self.intercept(.read, path) { limit in
                    guard let limit, limit < buffer.count else { return try system.read(fd, buffer, path) }
                    return try system.read(fd, UnsafeMutableRawBufferPointer(rebasing: buffer[..<limit]), path)
                }
            },
            close: { fd in system.close(fd) }
        )
    }

    var compressionHook: @Sendable (Int) throws -> Void {
        { sequence in try self.compressing(sequence) }
    }

    private func intercept<T>(_ call: FileCall, _ path: String, _ body: (_ readLimit: Int?) throws -> T) throws -> T {
        let (index, actions) = state.withLock { state -> (Int, [FaultAction]) in
            state.inFlight += 1
            let index = state.counts[call, default: 0]
            state.counts[call] = index + 1
            let key = call.rawValue + "\u{0}" + path
            let pathIndex = state.pathCounts[key, default: 0]
            state.pathCounts[key] = pathIndex + 1
            let actions = rules.filter { rule in
                guard rule.call == call else { return false }
                switch rule.match {
                case .nth(let n): return n == index
                case .path(let p, let n): return p == path && n == pathIndex
                case .every(let p): return p == path
                }
            }.map(\.action)
            state.fired += actions.count
            return (index, actions)
        }
        defer { state.withLock { $0.inFlight -= 1 } }
        observer?(call, path, index)
        var limit: Int?
        for action in actions {
            switch action {
            case .stall(let duration):
                stall(duration)
            case .fail(let code):
                throw ArchiveError(.io(errno: code), "\(call.operation) failed: \(String(cString: strerror(code)))", path: path)
            case .shortReads(let max):
                limit = max
            case .cancel(let cancel, let delay):
                cancel.fire(after: delay)
            }
        }
        return try body(limit)
    }

    private func stall(_ duration: Duration?) {
        state.withLock { state in
            if state.stallStartedAt == nil { state.stallStartedAt = .now }
        }
        gate.wait(for: duration)
    }

    private func compressing(_ sequence: Int) throws {
        state.withLock { state in
            state.inFlight += 1
            state.compressions += 1
        }
        defer { state.withLock { $0.inFlight -= 1 } }
        guard let fault = compressionFault, fault.sequence == sequence else { return }
        state.withLock { $0.fired += 1 }
        switch fault.action {
        case .stall(let duration):
            stall(duration)
        case .fail:
            throw InjectedFault(sequence: sequence)
        case .cancel(let cancel, let delay):
            cancel.fire(after: delay)
        }
    }
}
