#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A wake-up that a thread of ours polls along with the socket it waits on, so that cancelling
/// the task that awaits the thread (or stopping a relay) ends the wait at once, not at its timeout.
///
/// It is one end of a socket pair (a pipe with close-on-exec set atomically, which `pipe2` and
/// `eventfd` are not visible to Swift to do): ``signal()`` writes a byte to the other end and
/// nobody ever reads it, so the wake-up stays readable for every later poll. The descriptors are
/// closed when the last reference goes, so a cancellation handler that signals late never writes
/// into a descriptor number that has been reused.
final class TransferWake: Sendable {
    /// The end to poll for `POLLIN`.
    let pollFD: Int32
    private let signalFD: Int32

    init() throws(TransferError) {
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            throw TransferSocket.failure("socketpair")
        }
        pollFD = ends[0]
        signalFD = ends[1]
    }

    deinit {
        close(pollFD)
        close(signalFD)
    }

    /// Wakes every present and future poll on ``pollFD``. Safe from any thread, any number of times.
    func signal() {
        var byte: UInt8 = 1
        _ = send(signalFD, &byte, 1, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL))
    }

    /// Whether ``signal()`` was called.
    var isSignalled: Bool {
        var entry = pollfd(fd: pollFD, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) > 0
    }
}
