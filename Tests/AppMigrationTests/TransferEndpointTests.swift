import Foundation
import Testing
import TransferTestSupport

@testable import AppMigration

#if canImport(Glibc)
    import Glibc
#endif

/// Who is at the other end of an accepted connection, as a receiver's refusals name it.
@Suite struct TransferEndpointTests {
    /// An IPv4 peer of a listener on every address: the kernel gives it as `::ffff:127.0.0.1`
    /// on a listener on `::`, and it is named as the IPv4 address it is.
    @Test(arguments: ["127.0.0.1", "::", "0.0.0.0"])
    func anAcceptedConnectionsPeerIsNamed(listening host: String) async throws {
        guard let listener = try? TransferListener(TransferEndpoint(host: host, port: 0)) else {
            #expect(host == "::", "only an IPv6 listener may be missing here")
            return
        }
        let client = try rawConnect(TransferEndpoint(host: "127.0.0.1", port: listener.endpoint.port))
        defer { close(client) }
        let accepted = try await listener.accept(timeout: .seconds(10))
        defer { close(accepted) }
        let peer = try #require(TransferEndpoint.peer(of: accepted))
        #expect(peer.host == "127.0.0.1")
        #expect(peer.port == TransferEndpoint.boundPort(of: client))
        #expect(peer.description == "127.0.0.1:\(TransferEndpoint.boundPort(of: client))")
    }

    @Test func aSocketWithoutAPeerHasNone() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        #expect(TransferEndpoint.peer(of: fd) == nil)
    }
}
