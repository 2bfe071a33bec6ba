#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A host and a TCP port: where a receiver listens and a sender connects.
///
/// Written `HOST:PORT`, where the host is a name (`tablet.local`, `localhost`), an IPv4 address
/// (`192.0.2.7`) or an IPv6 address in brackets (`[::1]`, `[fe80::1%eth0]`); `[::]:PORT` listens
/// on every IPv6 and IPv4 address, `0.0.0.0:PORT` on every IPv4 one. Names go through the system
/// resolver (`getaddrinfo`), when connecting or listening, so `/etc/hosts`, DNS and mDNS all work;
/// port 0 lets the system choose.
public struct TransferEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// The host as written, without brackets: a name, an IPv4 or an IPv6 address.
    public var host: String
    /// The TCP port; 0 asks a listener for any free one.
    public var port: UInt16

    /// An endpoint at `host` (a name, an IPv4 or an IPv6 address) and `port`.
    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT`, e.g. `127.0.0.1:7070`, `tablet.local:7070`, `[::1]:7070`.
    ///
    /// Only the form is checked here; whether the name resolves is known when it is used.
    public init(parsing text: String) throws {
        let usage = "'\(text)' is not HOST:PORT (e.g. 127.0.0.1:7070, tablet.local:7070 or [::1]:7070)"
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else {
            throw TransferError(.invalidAddress, usage)
        }
        var host = String(text[..<colon])
        if host.hasPrefix("[") {
            guard host.hasSuffix("]"), host.count > 2 else { throw TransferError(.invalidAddress, usage) }
            host = String(host.dropFirst().dropLast())
            guard host.contains(":") else { throw TransferError(.invalidAddress, "'\(host)' in brackets is not an IPv6 address") }
        } else if host.contains(":") {
            throw TransferError(.invalidAddress, "\(usage): write an IPv6 address in brackets, [\(host)]:\(port)")
        }
        guard !host.isEmpty, !host.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F }) else {
            throw TransferError(.invalidAddress, usage)
        }
        self.init(host: host, port: port)
    }

    /// `HOST:PORT`, with an IPv6 address in brackets.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// One address the host resolved to.
    struct Address: Sendable {
        var family: Int32
        var storage: sockaddr_storage
        var length: socklen_t
    }

    /// The addresses of this endpoint, from the system resolver: for listening (`passive`) or for
    /// connecting. It may block on DNS, so call it from a thread of our own, not the pool.
    /// - Throws: ``TransferError`` `.invalidAddress` naming the host and the resolver's reason.
    func resolve(passive: Bool) throws(TransferError) -> [Address] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = passive ? AI_PASSIVE : AI_ADDRCONFIG
        // A numeric host needs no lookup; AI_NUMERICHOST keeps it from ever waiting for DNS.
        var probe = in6_addr()
        let unscoped = host.split(separator: "%", maxSplits: 1).first.map(String.init) ?? host
        if inet_pton(AF_INET, host, &probe) == 1 || inet_pton(AF_INET6, unscoped, &probe) == 1 {
            hints.ai_flags |= AI_NUMERICHOST
            hints.ai_flags &= ~AI_ADDRCONFIG
        }
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let list else {
            let reason = status == EAI_SYSTEM ? String(cString: strerror(errno)) : String(cString: gai_strerror(status))
            throw TransferError(.invalidAddress, "cannot resolve '\(host)': \(reason)")
        }
        defer { freeaddrinfo(list) }
        var addresses: [Address] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = list
        while let entry = cursor {
            if let address = entry.pointee.ai_addr,
                entry.pointee.ai_family == AF_INET || entry.pointee.ai_family == AF_INET6
            {
                var storage = sockaddr_storage()
                withUnsafeMutableBytes(of: &storage) { target in
                    target.copyMemory(from: UnsafeRawBufferPointer(start: address, count: Int(entry.pointee.ai_addrlen)))
                }
                addresses.append(Address(family: entry.pointee.ai_family, storage: storage, length: entry.pointee.ai_addrlen))
            }
            cursor = entry.pointee.ai_next
        }
        guard !addresses.isEmpty else {
            throw TransferError(.invalidAddress, "'\(host)' has no IPv4 or IPv6 address")
        }
        return addresses
    }

    /// The address at the other end of a connected socket, for reports that name who connected;
    /// nil if the system cannot say (the peer already went).
    static func peer(of fd: Int32) -> TransferEndpoint? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let got = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) }
        }
        guard got == 0 else { return nil }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let family = Int32(storage.ss_family)
        let written: UnsafePointer<CChar>? = withUnsafeBytes(of: &storage) { bytes in
            // The address follows the port in both: sin_addr at 4, sin6_addr at 8.
            let address = bytes.baseAddress! + (family == AF_INET6 ? 8 : 4)
            return inet_ntop(family, address, &text, socklen_t(text.count))
        }
        guard family == AF_INET || family == AF_INET6, written != nil else { return nil }
        var host = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        // An IPv4 peer of a listener on [::] comes as ::ffff:a.b.c.d: said as the IPv4 address it is.
        if host.hasPrefix("::ffff:"), host.contains(".") { host.removeFirst("::ffff:".count) }
        let port = withUnsafeBytes(of: &storage) { UInt16($0[2]) << 8 | UInt16($0[3]) }
        return TransferEndpoint(host: host, port: port)
    }

    /// The port of a bound socket (to learn the one the system chose for port 0).
    package static func boundPort(of fd: Int32) -> UInt16 {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return withUnsafeBytes(of: &storage) { bytes in
            // sin_port and sin6_port are both the big-endian u16 right after the family.
            UInt16(bytes[2]) << 8 | UInt16(bytes[3])
        }
    }
}
