package import AppMigration
import Foundation

/// A blocking listening socket on 127.0.0.1 with a port the system picks.
package func rawListen() throws -> Int32 {
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

/// The port a socket was bound to, as the library reads it.
package func boundPort(_ fd: Int32) -> UInt16 {
    TransferEndpoint.boundPort(of: fd)
}

/// A blocking connected socket.
package func rawConnect(_ endpoint: TransferEndpoint) throws -> Int32 {
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

/// Reads exactly `count` bytes (blocking); fewer if the peer closed, or if 30 s passed without a
/// byte (a loaded 2-core machine has kept a peer waiting more than 10 s).
package func receiveExactly(_ fd: Int32, _ count: Int) -> [UInt8] {
    var timeout = timeval(tv_sec: 30, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: max(count, 1))
    while bytes.count < count {
        let got = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, count - bytes.count, 0) }
        if got <= 0 { break }
        bytes += buffer[..<got]
    }
    return bytes
}

/// A hello as a peer of protocol `version` sends it.
package func helloBytes(version: UInt32, flags: UInt32 = 0) -> [UInt8] {
    Array("AMKXFER1".utf8) + [
        UInt8(version & 0xff), UInt8(version >> 8 & 0xff), UInt8(version >> 16 & 0xff), UInt8(version >> 24),
        UInt8(flags & 0xff), UInt8(flags >> 8 & 0xff), UInt8(flags >> 16 & 0xff), UInt8(flags >> 24)
    ]
}

/// Reads until the peer closes its side (or 30 s pass without a byte); how many bytes came.
package func readToEnd(_ fd: Int32) -> Int {
    var total = 0
    while true {
        let got = receiveExactly(fd, 64 << 10).count
        if got == 0 { return total }
        total += got
    }
}
