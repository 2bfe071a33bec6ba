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

    /// A host channel whose peer said hello and closed its end, the hello received; `body` runs
    /// with it before the channel's descriptor is closed.
    static func withPeerGoneAfterItsHello(_ body: (ExtensionChannel) throws -> Void) throws {
        var sockets: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &sockets) == 0)
        defer { close(sockets[0]) }
        let host = ExtensionChannel(descriptor: sockets[0])
        try ExtensionChannel(descriptor: sockets[1]).send(
            ExtensionHello(protocol: ExtensionProtocol.name, version: 1, exports: true, imports: true))
        close(sockets[1])
        _ = try host.receiveHello(within: .seconds(1))
        try body(host)
    }

    @Test func aPeerThatClosesIsReportedWithTheOffset() throws {
        try Self.withPeerGoneAfterItsHello { host in
            #expect(throws: ExtensionChannel.Failure.closed(offset: host.bytesReceived, reason: "it closed the channel")) {
                _ = try host.receive(within: .seconds(1))
            }
        }
    }

    /// A send to a peer that is gone names where the conversation stood, as a receive does: it
    /// said "byte 0" of an extension that died after its hello and an append had arrived.
    @Test func aSendToAPeerThatIsGoneIsReportedWithTheOffset() throws {
        try Self.withPeerGoneAfterItsHello { host in
            #expect(host.bytesReceived > 0)
            #expect(throws: ExtensionChannel.Failure.closed(offset: host.bytesReceived, reason: String(cString: strerror(EPIPE)))) {
                try host.send(ExtensionHello(protocol: ExtensionProtocol.name, version: 1, exports: true, imports: true))
            }
        }
    }

    /// The identity of the file open at `descriptor`, or nil if none is.
    static func openFile(_ descriptor: Int32) -> (device: UInt64, inode: UInt64)? {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return nil }
        return (UInt64(status.st_dev), UInt64(status.st_ino))
    }

    /// Reaping a process ends its channel but keeps the channel's descriptor until the channel is
    /// gone. Closing it at once freed its number while the session still held the channel: a
    /// caller's cancellation arriving just after the reaping sent `cancel` through it, into the
    /// next file the process had opened under that number (a transfer then failed, "Connection
    /// reset by peer", on a frame that was never its own).
    @Test func aReapedProcesssChannelKeepsItsDescriptorUntilItIsGone() async throws {
        try await Scratch.with { scratch in
            let url = try ExtensionProcessTests.writeExecutable("#!/bin/sh\nexit 0\n", named: "quick.sh", in: scratch)
            var process: ExtensionProcess? = try ExtensionProcess.spawn(
                ExtensionExecutable(path: url.path(percentEncoded: false)), name: "quick", container: try scratch.container("source"))
            let descriptor = try #require(process?.channel.descriptor)
            let socket = try #require(Self.openFile(descriptor))
            let ended = try #require(process?.finish(waitingUpTo: .seconds(30)))
            #expect(ended.isClean, "\(ended)")
            // Every file opened now takes another number.
            var pipes: [[Int32]] = []
            defer {
                for pipe in pipes {
                    close(pipe[0])
                    close(pipe[1])
                }
            }
            for _ in 0..<4 {
                var ends: [Int32] = [-1, -1]
                try #require(pipe(&ends) == 0)
                pipes.append(ends)
                #expect(!ends.contains(descriptor))
            }
            let still = try #require(Self.openFile(descriptor), "the channel's descriptor was closed while the channel lived")
            #expect(still == socket)
            // What the session might still do with the channel fails as on a closed channel.
            #expect(throws: ExtensionChannel.Failure.self) {
                try process?.channel.send(ExtensionMessage.cancel, timeout: .milliseconds(100))
            }
            #expect(throws: ExtensionChannel.Failure.self) { _ = try process?.channel.receive(within: .milliseconds(100)) }
            #expect(process?.finish(waitingUpTo: .zero).isClean == true)
            // Gone with the channel: the number is free, or another file's.
            process = nil
            if let now = Self.openFile(descriptor) { #expect(now != socket) }
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
