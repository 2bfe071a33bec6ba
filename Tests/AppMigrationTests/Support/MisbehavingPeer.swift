import Foundation
import Synchronization
import TestSupport
import TransferTestSupport

/// A peer that trickles: it sends `bytes` one at a time, one every `interval`, on a thread of its
/// own, like a peer holding a connection open with the least traffic that keeps resetting a
/// socket timeout. It stops when the other side answers (and then half-closes, as a sender that
/// has read the verdict would), when the bytes run out, when a send fails, or at ``finish()``.
final class Trickler: Sendable {
    private let sentCount = Atomic<Int>(0)
    private let stopping = Atomic<Bool>(false)
    private let finished = Atomic<Bool>(false)

    init(_ fd: Int32, bytes: [UInt8], every interval: Duration) {
        let milliseconds = Int32(interval.components.seconds * 1000 + interval.components.attoseconds / 1_000_000_000_000_000)
        let thread = Thread { [self] in
            defer { finished.store(true, ordering: .releasing) }
            for byte in bytes {
                if stopping.load(ordering: .acquiring) { return }
                // The interval's wait, watching for an answer meanwhile.
                var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                if poll(&entry, 1, milliseconds) > 0 {
                    shutdown(fd, Int32(SHUT_WR))
                    return
                }
                guard sendAll(fd, [byte]) else { return }
                sentCount.add(1, ordering: .relaxed)
            }
        }
        thread.start()
    }

    /// Bytes sent so far.
    var sent: Int { sentCount.load(ordering: .relaxed) }

    /// Stops trickling and waits for the thread to let go of the socket (at most one interval).
    func finish() {
        stopping.store(true, ordering: .releasing)
        while !finished.load(ordering: .acquiring) { usleep(1_000) }
    }
}

/// Reads until the peer closes (or 30 s pass without a byte); returns how many bytes came.
func readToEnd(_ fd: Int32) -> Int {
    var timeout = timeval(tv_sec: 30, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var total = 0
    var buffer = [UInt8](repeating: 0, count: 64 << 10)
    while true {
        let got = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
        if got <= 0 { return total }
        total += got
    }
}

/// The ids of this process's threads that are blocked right now in `poll(2)` on `descriptors`
/// descriptors with a timeout of at least `milliseconds` (from `/proc/self/task/*/syscall`, whose
/// first fields are the system call's number and arguments; x86-64 numbering).
func threadsInPoll(descriptors: Int, timeoutAtLeast milliseconds: Int) -> [String] {
    let pollNumber = "7"
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.filter { id in
        let line = (try? String(contentsOfFile: "/proc/self/task/\(id)/syscall", encoding: .utf8)) ?? ""
        let fields = line.split(separator: " ")
        guard fields.count >= 4, fields[0] == pollNumber,
            let count = Int(fields[2].dropFirst(2), radix: 16), let timeout = Int(fields[3].dropFirst(2), radix: 16)
        else {
            return false
        }
        return count == descriptors && timeout >= milliseconds
    }
}

/// How many times the thread `id` of this process has gone to sleep and been woken again.
func voluntaryContextSwitches(ofThread id: String) -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/self/task/\(id)/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("voluntary_ctxt_switches:") })
    else {
        return nil
    }
    return Int(line.split(separator: "\t").last.map { $0.trimmingCharacters(in: .whitespaces) } ?? "")
}
