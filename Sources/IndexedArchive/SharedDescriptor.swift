import Synchronization

/// A file descriptor used by jobs that may be abandoned: it is closed only once its owner has
/// asked and no job is inside a system call with it, so an abandoned read can never land on a
/// descriptor number the process has since reused for another file.
final class SharedDescriptor: Sendable {
    private struct State {
        var fd: Int32
        var users = 0
        var closeRequested = false
    }

    private let state: Mutex<State>
    private let closer: @Sendable (Int32) -> Void

    init(_ fd: Int32, close: @escaping @Sendable (Int32) -> Void) {
        state = Mutex(State(fd: fd))
        closer = close
    }

    /// Runs `body` with the descriptor, or throws `CancellationError` if it is already closed.
    func use<T>(_ body: (Int32) throws -> T) throws -> T {
        let fd = try state.withLock { state -> Int32 in
            guard !state.closeRequested else { throw CancellationError() }
            state.users += 1
            return state.fd
        }
        defer { release() }
        return try body(fd)
    }

    private func release() {
        let fd = state.withLock { state -> Int32? in
            state.users -= 1
            return state.closeRequested && state.users == 0 && state.fd >= 0 ? state.fd : nil
        }
        if let fd { finallyClose(fd) }
    }

    private func finallyClose(_ fd: Int32) {
        let mine = state.withLock { state -> Bool in
            guard state.fd == fd else { return false }
            state.fd = -1
            return true
        }
        if mine { closer(fd) }
    }

    /// Closes now, or as soon as the last job using it returns.
    func close() {
        let fd = state.withLock { state -> Int32? in
            state.closeRequested = true
            return state.users == 0 && state.fd >= 0 ? state.fd : nil
        }
        if let fd { finallyClose(fd) }
    }
}
