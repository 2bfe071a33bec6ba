import AppMigration
import Foundation
import Synchronization

/// A TCP proxy on a thread of its own that forwards one connection both ways and cuts it (closes
/// both sides) once `limit` bytes have gone from the client to the server: a network that fails
/// at a chosen byte.
final class CuttingProxy: Sendable {
    let endpoint: TransferEndpoint
    private let listenFD: Int32
    private let state = Mutex<(forwarded: Int, finished: Bool)>((0, false))

    init(to target: TransferEndpoint, cutAfter limit: Int) throws {
        listenFD = try rawListen()
        endpoint = TransferEndpoint(host: "127.0.0.1", port: boundPort(listenFD))
        let thread = Thread { [self] in
            run(target: target, limit: limit)
            state.withLock { $0.finished = true }
        }
        thread.start()
    }

    /// Bytes forwarded from the client to the server so far.
    var forwarded: Int { state.withLock { $0.forwarded } }
    var finished: Bool { state.withLock { $0.finished } }

    private func run(target: TransferEndpoint, limit: Int) {
        defer { close(listenFD) }
        let client = accept(listenFD, nil, nil)
        guard client >= 0 else { return }
        defer { close(client) }
        guard let server = try? rawConnect(target) else { return }
        defer { close(server) }
        var clientOpen = true
        var serverOpen = true
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while clientOpen || serverOpen {
            var fds = [
                pollfd(fd: clientOpen ? client : -1, events: Int16(POLLIN), revents: 0),
                pollfd(fd: serverOpen ? server : -1, events: Int16(POLLIN), revents: 0)
            ]
            guard poll(&fds, 2, 1000) >= 0 else { return }
            if clientOpen && fds[0].revents != 0 {
                let room = min(buffer.count, limit - forwarded)
                let got = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress!, room, 0) }
                if got <= 0 {
                    clientOpen = false
                    shutdown(server, Int32(SHUT_WR))
                } else {
                    guard sendAll(server, buffer[..<got]) else { return }
                    let total = state.withLock { state in
                        state.forwarded += got
                        return state.forwarded
                    }
                    if total >= limit { return }  // the cut: both sockets are closed by the defers
                }
            }
            if serverOpen && fds[1].revents != 0 {
                let got = buffer.withUnsafeMutableBytes { recv(server, $0.baseAddress!, $0.count, 0) }
                if got <= 0 {
                    serverOpen = false
                    shutdown(client, Int32(SHUT_WR))
                } else {
                    guard sendAll(client, buffer[..<got]) else { return }
                }
            }
        }
    }
}

/// A blocking listening socket on 127.0.0.1 with a port the system picks.
func rawListen() throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard fd >= 0, bound == 0, listen(fd, 4) == 0 else { throw CocoaError(.fileWriteUnknown) }
    return fd
}

func boundPort(_ fd: Int32) -> UInt16 {
    var address = sockaddr_in()
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return UInt16(bigEndian: address.sin_port)
}

/// A blocking connected socket.
func rawConnect(_ endpoint: TransferEndpoint) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = endpoint.port.bigEndian
    address.sin_addr.s_addr = inet_addr(endpoint.host)
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard fd >= 0, connected == 0 else {
        close(fd)
        throw CocoaError(.fileReadUnknown)
    }
    return fd
}

/// Sends everything (no SIGPIPE); false if the peer went away.
@discardableResult
func sendAll(_ fd: Int32, _ bytes: some Collection<UInt8>) -> Bool {
    let bytes = Array(bytes)
    var done = 0
    while done < bytes.count {
        let sent = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + done, $0.count - done, Int32(MSG_NOSIGNAL)) }
        if sent <= 0 { return false }
        done += sent
    }
    return true
}

/// Reads exactly `count` bytes (blocking, 10 s receive timeout); fewer if the peer closed.
func receiveExactly(_ fd: Int32, _ count: Int) -> [UInt8] {
    var timeout = timeval(tv_sec: 10, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: count)
    while bytes.count < count {
        let got = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, count - bytes.count, 0) }
        if got <= 0 { break }
        bytes += buffer[..<got]
    }
    return bytes
}

/// A hello as a peer of protocol `version` sends it.
func helloBytes(version: UInt32) -> [UInt8] {
    Array("AMKXFER1".utf8) + [
        UInt8(version & 0xff), UInt8(version >> 8 & 0xff), UInt8(version >> 16 & 0xff), UInt8(version >> 24), 0, 0, 0, 0
    ]
}
