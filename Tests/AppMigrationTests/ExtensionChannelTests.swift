import Foundation
import Testing
import TransferTestSupport

@testable import AppMigration

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The extension protocol's framing, on a socket pair.
@Suite struct ExtensionChannelTests {
    /// Two connected channels, closed at the end.
    static func withPair(_ body: (ExtensionChannel, ExtensionChannel) throws -> Void) throws {
        var sockets: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &sockets) == 0)
        defer {
            close(sockets[0])
            close(sockets[1])
        }
        try body(ExtensionChannel(descriptor: sockets[0]), ExtensionChannel(descriptor: sockets[1]))
    }

    @Test func messagesArriveWholeAndInOrderWithTheirOffsets() throws {
        try Self.withPair { host, extensionSide in
            try extensionSide.send(ExtensionHello(protocol: ExtensionProtocol.name, version: 1, exports: true, imports: false))
            try extensionSide.send(ExtensionMessage.append(id: 1, path: "/c/Documents/a", pathInArchive: nil))
            #expect(try extensionSide.sendNow(ExtensionMessage.heartbeat(cpuNanoseconds: 5, completed: 1, total: 2)))
            let hello = try #require(try host.receiveHello(within: .seconds(1)))
            #expect(hello.exports && !hello.imports)
            let helloBytes = host.bytesReceived
            #expect(try host.receive(within: .seconds(1)) == .append(id: 1, path: "/c/Documents/a", pathInArchive: nil))
            #expect(try host.receiveNow() == .heartbeat(cpuNanoseconds: 5, completed: 1, total: 2))
            #expect(try host.receiveNow() == nil)
            #expect(host.bytesReceived > helloBytes)
        }
    }

    /// A heartbeat the socket has no room for is dropped at once: the heartbeat thread must never
    /// wait for a host that is busy packing a large file and reads nothing meanwhile.
    @Test func sendNowNeverWaitsForAFullSocket() throws {
        try Self.withPair { _, extensionSide in
            var sent = 0
            let start = ContinuousClock.now
            while try extensionSide.sendNow(ExtensionMessage.heartbeat(cpuNanoseconds: 1, completed: 0, total: 0)) {
                sent += 1
                try #require(sent < 1_000_000, "the socket never filled")
            }
            #expect(sent > 0)
            #expect(ContinuousClock.now - start < .seconds(5))
            // Full: the next one is refused too, at once, and nothing half-sent is left.
            #expect(try extensionSide.sendNow(ExtensionMessage.finished) == false)
        }
    }

    @Test func aPeerThatClosesIsReportedWithTheOffset() throws {
        var sockets: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &sockets) == 0)
        defer { close(sockets[0]) }
        let host = ExtensionChannel(descriptor: sockets[0])
        try ExtensionChannel(descriptor: sockets[1]).send(
            ExtensionHello(protocol: ExtensionProtocol.name, version: 1, exports: true, imports: true))
        close(sockets[1])
        _ = try host.receiveHello(within: .seconds(1))
        #expect(throws: ExtensionChannel.Failure.closed(offset: host.bytesReceived, reason: "it closed the channel")) {
            _ = try host.receive(within: .seconds(1))
        }
    }

    /// The process starts in its container: a relative executable path is the host's.
    @Test func aRelativeExecutablePathIsResolvedInTheHostsFolder() {
        #expect(ExtensionProcess.absolutePath("bin/ext", from: "/work") == "/work/bin/ext")
        #expect(ExtensionProcess.absolutePath("ext", from: "/") == "/ext")
        #expect(ExtensionProcess.absolutePath("/usr/bin/ext", from: "/work") == "/usr/bin/ext")
        #expect(ExtensionProcess.absolutePath("", from: "/work") == "")
    }
}
