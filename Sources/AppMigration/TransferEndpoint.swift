#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An IPv4 address and a TCP port: where a receiver listens and a sender connects.
///
/// IPv4 only, and written as `HOST:PORT` with a numeric host, because the transfer is meant for
/// one machine or a local link (the tests use `127.0.0.1` only); port 0 lets the system choose.
public struct TransferEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// The dotted IPv4 address, e.g. `127.0.0.1`.
    public var host: String
    public var port: UInt16

    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT`, e.g. `127.0.0.1:7070`.
    public init(parsing text: String) throws {
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else {
            throw TransferError(.invalidAddress, "'\(text)' is not HOST:PORT (e.g. 127.0.0.1:7070)")
        }
        let host = String(text[..<colon])
        var address = in_addr()
        guard inet_pton(AF_INET, host, &address) == 1 else {
            throw TransferError(.invalidAddress, "'\(host)' is not a numeric IPv4 address (e.g. 127.0.0.1)")
        }
        self.init(host: host, port: port)
    }

    public var description: String { "\(host):\(port)" }

    /// The `sockaddr_in` for this endpoint.
    func socketAddress() throws -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            throw TransferError(.invalidAddress, "'\(host)' is not a numeric IPv4 address")
        }
        return address
    }
}
