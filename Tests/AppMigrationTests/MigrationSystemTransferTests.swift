@testable import AppMigration
import Foundation
import Testing

/// Tests `MigrationSystem+Transfer.swift`: a migration over a loopback TCP connection, in one
/// process (the two-process version is in amkTests).
// Serialized: each test compresses megabytes, and the host's watchdog tests measure time.
@Suite(.serialized) struct MigrationSystemTransferTests {
    static let loopback = TransferEndpoint(host: "127.0.0.1", port: 0)

    /// Receives on a new listener while `send` runs; returns both outcomes.
    static func transfer(
        into destination: MigrationDataContainer, using importer: TreeCopyMigration = TreeCopyMigration(),
        send: @Sendable (TransferEndpoint) async throws -> (exported: DeviceToDeviceExportProperties, receiverMessage: String),
        via route: (@Sendable (TransferEndpoint) throws -> TransferEndpoint)? = nil
    ) async throws -> (received: Result<ResourcesImportRequest, any Error>,
                       sent: Result<(exported: DeviceToDeviceExportProperties, receiverMessage: String), any Error>) {
        let listener = try TransferListener(loopback)
        let target = try route?(listener.endpoint) ?? listener.endpoint
        async let received = capture {
            try await quickSystem.receive(importer, into: destination, on: listener, acceptTimeout: .seconds(20),
                                          idleTimeout: .seconds(20))
        }
        let sent = await capture { try await send(target) }
        return (await received, sent)
    }

    static func send(_ source: MigrationDataContainer, _ migration: TreeCopyMigration = TreeCopyMigration())
        -> @Sendable (TransferEndpoint) async throws -> (exported: DeviceToDeviceExportProperties, receiverMessage: String) {
        { endpoint in
            try await quickSystem.send(migration, from: source, request: MigrationRequest(destinationPlatform: .current),
                                       to: endpoint)
        }
    }

    @Test func aTransferOverLoopbackArrivesByteIdentical() async throws {
        try await Scratch.with { scratch in
            let source = try scratch.container("export")
            let destination = try scratch.container("import")
            try seedTransferContainer(source)
            let (received, sent) = try await Self.transfer(into: destination, send: Self.send(source, TreeCopyMigration(version: "2.1")))
            let request = try received.get()
            let (exported, message) = try sent.get()
            #expect(request.sourceVersion == "2.1")
            #expect(exported.version == "2.1")
            #expect(message.contains("imported into \(destination.containerRootDirectory.path(percentEncoded: false))"), "\(message)")
            #expect(try snapshot(destination.containerRootDirectory) == snapshot(source.containerRootDirectory))
            guard case .success? = importStatus(of: destination) else { Issue.record("no success status"); return }
        }
    }

    /// The connection is cut after N bytes from the sender, N from the hello to the footer.
    @Test func aConnectionCutAtAnyByteFailsBothSidesAndLeavesNothing() async throws {
        var generator = SystemRandomNumberGenerator()
        let seed = UInt64.random(in: 0...UInt64.max, using: &generator)
        var random = SplitMix(seed: seed)
        // The whole conversation's length, through a proxy that does not cut.
        let total = try await Scratch.with { scratch in
            let source = try scratch.container("export")
            let destination = try scratch.container("import")
            try seedTransferContainer(source, bigBytes: 1 << 20)
            let box = ProxyBox()
            let (received, sent) = try await Self.transfer(into: destination, send: Self.send(source)) { target in
                try box.make(target, limit: .max)
            }
            _ = try received.get()
            _ = try sent.get()
            return box.proxy!.forwarded
        }
        #expect(total > 1 << 20)
        let middle = (0..<3).map { _ in Int.random(in: 17..<(total - 64), using: &random) }
        for cut in [10, 16, 200] + middle + [total - 30] {
            try await Scratch.with { scratch in
                let source = try scratch.container("export")
                let destination = try scratch.container("import")
                try seedTransferContainer(source, bigBytes: 1 << 20)
                try write("keep", to: "kept.txt", in: destination.documentsDirectory)
                let before = try snapshot(destination.containerRootDirectory)
                let box = ProxyBox()
                let (received, sent) = try await Self.transfer(into: destination, send: Self.send(source)) { target in
                    try box.make(target, limit: cut)
                }
                let context = "cut after \(cut) of \(total) bytes (seed \(seed))"
                switch received {
                case .success: Issue.record("receiver succeeded: \(context)")
                case .failure(let error as TransferError) where cut < 16:
                    // Cut inside the hello: no import began, and the message says how far it got.
                    #expect(error.code == .connectionLost, "\(context): \(error)")
                    #expect(error.message.contains("after \(cut) of the hello's 16 bytes"), "\(context): \(error)")
                    #expect(importStatus(of: destination) == nil, "\(context)")
                case .failure(let error as TransferError):
                    // The receiver names what the sender did; the import's error is underneath.
                    #expect(error.code == .connectionLost, "\(context): \(error)")
                    #expect(error.message.hasPrefix("the sender closed the connection after \(cut - 16) bytes of the archive")
                                || error.message.hasPrefix("the sender reset the connection after"), "\(context): \(error)")
                    #expect((error.underlying as? AppMigrationError)?.code == .unreadableArchive, "\(context): \(error)")
                    guard case .failure? = importStatus(of: destination) else { Issue.record("no failure status: \(context)"); return }
                case .failure(let error):
                    Issue.record("\(context): unexpected receiver error \(error)")
                }
                switch sent {
                case .success: Issue.record("sender succeeded: \(context)")
                case .failure(let error as TransferError):
                    #expect(error.code == .connectionLost || error.code == .remoteFailure, "\(context): \(error)")
                case .failure(let error):
                    Issue.record("\(context): unexpected sender error \(error)")
                }
                #expect(try snapshot(destination.containerRootDirectory) == before, "\(context)")
                #expect(try stagingFolders(in: destination).isEmpty, "\(context)")
            }
        }
    }

    @Test func aFailedImportIsReportedToTheSender() async throws {
        try await Scratch.with { scratch in
            let source = try scratch.container("export")
            let destination = try scratch.container("import")
            try seedTransferContainer(source, bigBytes: 4096)
            var importer = TreeCopyMigration()
            importer.importFails = true
            let (received, sent) = try await Self.transfer(into: destination, using: importer, send: Self.send(source))
            #expect(throws: TreeCopyMigration.Failure.self) { try received.get() }
            do {
                _ = try sent.get()
                Issue.record("the sender succeeded")
            } catch let error as TransferError {
                #expect(error.code == .remoteFailure)
                #expect(error.message.contains("importer failed after moving Documents"), "\(error)")
            }
        }
    }

    @Test func aReceiverThatDisappearsIsALostConnection() async throws {
        try await Scratch.with { scratch in
            let source = try scratch.container("export")
            try seedTransferContainer(source, bigBytes: 8 << 20)
            let before = try snapshot(source.containerRootDirectory)
            let listening = try rawListen()
            let endpoint = TransferEndpoint(host: "127.0.0.1", port: boundPort(listening))
            // A receiver that says hello, takes 100 KB and vanishes.
            let peer = Thread {
                let fd = accept(listening, nil, nil)
                _ = receiveExactly(fd, 16)
                sendAll(fd, helloBytes(version: 1))
                _ = receiveExactly(fd, 100_000)
                close(fd)
                close(listening)
            }
            peer.start()
            do {
                _ = try await Self.send(source)(endpoint)
                Issue.record("the sender succeeded")
            } catch let error as TransferError {
                #expect(error.code == .connectionLost, "\(error)")
                #expect(error.message.contains("127.0.0.1:\(endpoint.port)"), "\(error)")
            }
            #expect(try snapshot(source.containerRootDirectory) == before)
        }
    }

    /// A sender that says hello, sends a few bytes and then nothing: the idle timeout fails the
    /// import instead of waiting for good, and the message says the sender was idle (not
    /// "Resource temporarily unavailable").
    @Test func aStalledSenderTimesOut() async throws {
        try await Scratch.with { scratch in
            let destination = try scratch.container("import")
            let listener = try TransferListener(Self.loopback)
            async let received = capture {
                try await quickSystem.receive(TreeCopyMigration(), into: destination, on: listener, acceptTimeout: .seconds(20),
                                              idleTimeout: .milliseconds(500))
            }
            let fd = try rawConnect(listener.endpoint)
            defer { close(fd) }
            sendAll(fd, helloBytes(version: 1))
            #expect(receiveExactly(fd, 16) == helloBytes(version: 1))
            sendAll(fd, [0xFD, 0x37, 0x7A, 0x58]) // the start of an xz header, then silence
            let start = ContinuousClock.now
            do {
                _ = try await received.get()
                Issue.record("a stalled stream was imported")
            } catch let error as TransferError {
                #expect(error.code == .timedOut)
                #expect(error.message.hasPrefix("the sender was idle for 0.5 s (4 bytes in 0.5 s; 4 bytes of the archive in all)"),
                        "\(error)")
                #expect((error.underlying as? AppMigrationError)?.code == .unreadableArchive, "\(error)")
            }
            #expect(ContinuousClock.now - start < .seconds(10))
            let header = receiveExactly(fd, 5)
            #expect(header.first == 1, "the sender is told of the failure")
            guard case .failure? = importStatus(of: destination) else { Issue.record("no failure status"); return }
        }
    }

    @Test func aSenderOfAnotherVersionIsRefusedOnBothSides() async throws {
        try await Scratch.with { scratch in
            let destination = try scratch.container("import")
            let listener = try TransferListener(Self.loopback)
            let endpoint = listener.endpoint
            async let received = capture {
                try await quickSystem.receive(TreeCopyMigration(), into: destination, on: listener, acceptTimeout: .seconds(20))
            }
            let fd = try rawConnect(endpoint)
            defer { close(fd) }
            sendAll(fd, helloBytes(version: 2))
            #expect(receiveExactly(fd, 16) == helloBytes(version: 1))
            let header = receiveExactly(fd, 5)
            #expect(header.first == 1)
            let message = String(decoding: receiveExactly(fd, header.count == 5 ? Int(header[1]) | Int(header[2]) << 8 : 0), as: UTF8.self)
            #expect(message.contains("version 1") && message.contains("version 2"), "\(message)")
            do {
                _ = try await received.get()
                Issue.record("the receiver accepted version 2")
            } catch let error as TransferError {
                #expect(error.code == .versionMismatch(local: 1, remote: 2))
                #expect(error.message == "the sender speaks transfer protocol version 2; this receiver speaks version 1")
            }
            #expect(importStatus(of: destination) == nil)
        }
    }

    @Test func aReceiverOfAnotherVersionIsRefusedBySender() async throws {
        try await Scratch.with { scratch in
            let source = try scratch.container("export")
            try seedTransferContainer(source, bigBytes: 4096)
            let listening = try rawListen()
            let endpoint = TransferEndpoint(host: "127.0.0.1", port: boundPort(listening))
            let peer = Thread {
                let fd = accept(listening, nil, nil)
                _ = receiveExactly(fd, 16)
                sendAll(fd, helloBytes(version: 9))
                _ = receiveExactly(fd, 1) // until the sender hangs up
                close(fd)
                close(listening)
            }
            peer.start()
            do {
                _ = try await Self.send(source)(endpoint)
                Issue.record("the sender accepted version 9")
            } catch let error as TransferError {
                #expect(error.code == .versionMismatch(local: 1, remote: 9))
                #expect(error.message.contains("speaks transfer protocol version 9; this sender speaks version 1"), "\(error)")
            }
        }
    }

    @Test func somethingElseThanASenderIsRefused() async throws {
        try await Scratch.with { scratch in
            let destination = try scratch.container("import")
            let listener = try TransferListener(Self.loopback)
            async let received = capture {
                try await quickSystem.receive(TreeCopyMigration(), into: destination, on: listener, acceptTimeout: .seconds(20))
            }
            let fd = try rawConnect(listener.endpoint)
            defer { close(fd) }
            sendAll(fd, Array("GET / HTTP/1.1\r\n\r\n".utf8))
            do {
                _ = try await received.get()
                Issue.record("an HTTP client was accepted")
            } catch let error as TransferError {
                #expect(error.code == .notAPeer)
            }
        }
    }

    // MARK: - Every wait for the peer is bounded

    /// A receiver that takes the whole archive and never reports: the sender gives up at the
    /// status timeout, saying so, instead of waiting for good.
    @Test(.timeLimit(.minutes(1))) func aReceiverThatNeverAnswersEndsTheSenderAtTheStatusTimeout() async throws {
        try await Scratch.with { scratch in
            let source = try scratch.container("export")
            try seedTransferContainer(source, bigBytes: 200_000)
            let listening = try rawListen()
            let endpoint = TransferEndpoint(host: "127.0.0.1", port: boundPort(listening))
            let archived = Box(-1)
            let release = Gate()
            let peer = Thread {
                let fd = accept(listening, nil, nil)
                _ = receiveExactly(fd, 16)
                sendAll(fd, helloBytes(version: 1))
                archived.current = readToEnd(fd) // to the sender's half-close
                release.blockThread() // and silence
                close(fd)
                close(listening)
            }
            peer.start()
            defer { release.open() }
            let start = ContinuousClock.now
            do {
                _ = try await quickSystem.send(TreeCopyMigration(), from: source, request: MigrationRequest(destinationPlatform: .current),
                                               to: endpoint, statusTimeout: .seconds(2))
                Issue.record("the sender succeeded without a status")
            } catch let error as TransferError {
                #expect(error.code == .timedOut)
                #expect(error.message.hasPrefix("no status from the receiver at \(endpoint) within 2 s after the end of the archive"),
                        "\(error)")
            }
            let elapsed = ContinuousClock.now - start
            #expect(elapsed >= .milliseconds(1500) && elapsed < .seconds(20), "\(elapsed)")
            #expect(archived.current > 200_000, "the receiver read the whole archive")
        }
    }

    /// A receiver that says hello and then reads nothing: once the connection's buffers are full,
    /// the sender waits for it, and cuts it off after the idle timeout.
    @Test(.timeLimit(.minutes(1))) func aReceiverThatStopsReadingIsCutOffAsIdle() async throws {
        try await Scratch.with { scratch in
            let source = try scratch.container("export")
            // Incompressible, and more than loopback's buffers hold while nobody reads.
            try seedTransferContainer(source, bigBytes: 12 << 20)
            let listening = try rawListen()
            let endpoint = TransferEndpoint(host: "127.0.0.1", port: boundPort(listening))
            let release = Gate()
            let peer = Thread {
                let fd = accept(listening, nil, nil)
                _ = receiveExactly(fd, 16)
                sendAll(fd, helloBytes(version: 1))
                release.blockThread()
                close(fd)
                close(listening)
            }
            peer.start()
            defer { release.open() }
            let start = ContinuousClock.now
            do {
                _ = try await quickSystem.send(TreeCopyMigration(), from: source, request: MigrationRequest(destinationPlatform: .current),
                                               to: endpoint, idleTimeout: .seconds(1))
                Issue.record("the sender succeeded")
            } catch let error as TransferError {
                #expect(error.code == .timedOut, "\(error)")
                #expect(error.message.hasPrefix("the receiver at \(endpoint) was idle for 1 s: it took "), "\(error)")
            }
            #expect(ContinuousClock.now - start < .seconds(30))
        }
    }

    /// A sender that trickles one byte every 200 ms: each byte would reset a plain socket timeout,
    /// but five bytes a second is not progress, and the receiver cuts it off after about the idle
    /// timeout, leaving the container as it was and recording the failure.
    @Test(.timeLimit(.minutes(1))) func aTricklingSenderIsCutOffAfterTheIdleTimeout() async throws {
        try await Scratch.with { scratch in
            let source = try scratch.container("export")
            let destination = try scratch.container("import")
            try seedTransferContainer(source, bigBytes: 100_000)
            let archive = scratch.url("real.tar.xz")
            try await quickSystem.exportResources(of: TreeCopyMigration(), from: source,
                                                  request: MigrationRequest(destinationPlatform: .current), to: archive)
            // The start of a real archive, so that the receiver's engine finds nothing wrong with it.
            let bytes = Array(try Data(contentsOf: archive).prefix(150))
            try write("keep", to: "kept.txt", in: destination.documentsDirectory)
            let before = try snapshot(destination.containerRootDirectory)
            let listener = try TransferListener(Self.loopback)
            let start = ContinuousClock.now
            async let received = capture {
                try await quickSystem.receive(TreeCopyMigration(), into: destination, on: listener, acceptTimeout: .seconds(20),
                                              idleTimeout: .seconds(1))
            }
            let fd = try rawConnect(listener.endpoint)
            defer { close(fd) }
            sendAll(fd, helloBytes(version: 1))
            #expect(receiveExactly(fd, 16) == helloBytes(version: 1))
            let trickler = Trickler(fd, bytes: bytes, every: .milliseconds(200))
            defer { trickler.finish() }
            let result = await received
            let elapsed = ContinuousClock.now - start
            do {
                _ = try result.get()
                Issue.record("a trickled stream was imported")
            } catch let error as TransferError {
                #expect(error.code == .timedOut)
                #expect(error.message.hasPrefix("the sender was idle for 1 s ("), "\(error)")
                #expect(error.message.contains(" bytes in 1 s; "), "\(error)")
            }
            #expect(elapsed >= .seconds(1) && elapsed < .seconds(10), "\(elapsed)")
            #expect(trickler.sent >= 3, "the sender kept sending while it was cut off")
            let header = receiveExactly(fd, 5)
            #expect(header.first == 1, "the sender is told of the failure")
            #expect(try snapshot(destination.containerRootDirectory) == before)
            #expect(try stagingFolders(in: destination).isEmpty)
            guard case .failure? = importStatus(of: destination) else { Issue.record("no failure status"); return }
        }
    }

    /// A sender that sends its hello one byte a second: the handshake deadline covers the whole
    /// hello, so it is cut off after the handshake timeout, not after 16 s or never.
    @Test(.timeLimit(.minutes(1))) func aHelloTrickledByteByByteIsCutOffByTheHandshakeDeadline() async throws {
        try await Scratch.with { scratch in
            let destination = try scratch.container("import")
            let listener = try TransferListener(Self.loopback)
            var limits = TransferLimits()
            limits.handshake = .seconds(1)
            let start = ContinuousClock.now
            async let received = capture {
                try await quickSystem.receive(TreeCopyMigration(), into: destination, on: listener, acceptTimeout: .seconds(20),
                                              limits: limits)
            }
            let fd = try rawConnect(listener.endpoint)
            defer { close(fd) }
            let trickler = Trickler(fd, bytes: helloBytes(version: 1), every: .seconds(1))
            defer { trickler.finish() }
            do {
                _ = try await received.get()
                Issue.record("the receiver went on")
            } catch let error as TransferError {
                #expect(error.code == .timedOut)
                #expect(error.message.hasPrefix("no hello from the sender within 1 s ("), "\(error)")
                #expect(error.message.hasSuffix(" of its 16 bytes arrived)"), "\(error)")
            }
            let elapsed = ContinuousClock.now - start
            #expect(elapsed >= .seconds(1) && elapsed < .seconds(8), "\(elapsed)")
            #expect(importStatus(of: destination) == nil)
        }
    }

    /// The same on the sender's side: a receiver that answers one byte a second.
    @Test(.timeLimit(.minutes(1))) func aReceiverHelloTrickledByteByByteIsCutOffByTheHandshakeDeadline() async throws {
        try await Scratch.with { scratch in
            let source = try scratch.container("export")
            try seedTransferContainer(source, bigBytes: 4096)
            let listening = try rawListen()
            defer { close(listening) }
            let endpoint = TransferEndpoint(host: "127.0.0.1", port: boundPort(listening))
            let trickler = Box<Trickler?>(nil)
            let peer = Thread {
                let fd = accept(listening, nil, nil)
                _ = receiveExactly(fd, 16)
                trickler.current = Trickler(fd, bytes: helloBytes(version: 1), every: .seconds(1))
                _ = readToEnd(fd) // until the sender hangs up
                trickler.current?.finish()
                close(fd)
            }
            peer.start()
            var limits = TransferLimits()
            limits.handshake = .seconds(1)
            let start = ContinuousClock.now
            do {
                _ = try await quickSystem.send(TreeCopyMigration(), from: source, request: MigrationRequest(destinationPlatform: .current),
                                               to: endpoint, limits: limits)
                Issue.record("the sender went on")
            } catch let error as TransferError {
                #expect(error.code == .timedOut)
                #expect(error.message.hasPrefix("no hello from the receiver at \(endpoint) within 1 s ("), "\(error)")
            }
            let elapsed = ContinuousClock.now - start
            #expect(elapsed >= .seconds(1) && elapsed < .seconds(8), "\(elapsed)")
        }
    }

    /// A receiver waiting for its sender sleeps in one poll(2) with the real timeout, on a thread
    /// of its own (the socket and the wake-up of cancellation: two descriptors), instead of waking
    /// every few milliseconds on the cooperative pool; cancelling it ends the wait at once.
    #if arch(x86_64)
    static let canSeeSystemCalls = FileManager.default.isReadableFile(atPath: "/proc/self/task/\(getpid())/syscall")
    #else
    static let canSeeSystemCalls = false
    #endif

    @Test(.enabled(if: canSeeSystemCalls, "reads x86-64 system call numbers from /proc/self/task/*/syscall"))
    func waitingForASenderSleepsInOnePollAndEndsWhenCancelled() async throws {
        let listener = try TransferListener(Self.loopback)
        try await withThrowingTaskGroup(of: Int32.self) { group in
            group.addTask { try await listener.accept(timeout: .seconds(60)) }
            #expect(try await eventually(timeout: .seconds(10)) { !threadsInPoll(descriptors: 2, timeoutAtLeast: 50_000).isEmpty })
            let waiting = threadsInPoll(descriptors: 2, timeoutAtLeast: 50_000)
            try #require(waiting.count == 1, "\(waiting)")
            let before = try #require(voluntaryContextSwitches(ofThread: waiting[0]))
            try await Task.sleep(for: .seconds(1))
            let after = try #require(voluntaryContextSwitches(ofThread: waiting[0]))
            #expect(after - before <= 2, "the waiting thread woke \(after - before) times in 1 s")
            #expect(threadsInPoll(descriptors: 2, timeoutAtLeast: 50_000) == waiting, "still in the same wait")
            let start = ContinuousClock.now
            group.cancelAll()
            await #expect(throws: CancellationError.self) { _ = try await group.next() }
            #expect(ContinuousClock.now - start < .seconds(5))
        }
        #expect(try await eventually(timeout: .seconds(5)) { threadsInPoll(descriptors: 2, timeoutAtLeast: 50_000).isEmpty })
    }

    @Test func endpointsParse() throws {
        #expect(try TransferEndpoint(parsing: "127.0.0.1:7070") == TransferEndpoint(host: "127.0.0.1", port: 7070))
        #expect(throws: TransferError.self) { try TransferEndpoint(parsing: "localhost:7070") }
        #expect(throws: TransferError.self) { try TransferEndpoint(parsing: "127.0.0.1") }
        #expect(throws: TransferError.self) { try TransferEndpoint(parsing: "127.0.0.1:99999") }
    }
}

// MARK: - Links from the archive (issue #10, finding 2)

extension MigrationSystemTransferTests {
    /// A sender whose `Documents` or `Library` is a link out of its container: the receiver's
    /// extraction refuses the link, both sides fail, and the sender is told which member.
    @Test(arguments: EscapingLink.all)
    func aReceivedTopLevelLinkLeadingOutsideFailsBothSides(link: EscapingLink) async throws {
        try await Scratch.with { scratch in
            let outside = try OutsideFolder(in: scratch)
            let outsideBefore = try outside.contents()
            let source = try scratch.container("export")
            try write("ordinary\n", to: "ordinary.txt", in: source.documentsDirectory)
            try write("ordinary\n", to: "ordinary.txt", in: source.applicationSupportDirectory)
            try link.plant(in: source, to: outside)
            let destination = try scratch.container("import")
            try write("mine", to: "keep.txt", in: destination.documentsDirectory)
            let before = try snapshot(destination.containerRootDirectory)
            let listener = try TransferListener(Self.loopback)
            async let received = capture {
                try await quickSystem.receive(MergingMigration(), into: destination, on: listener, acceptTimeout: .seconds(20),
                                              idleTimeout: .seconds(20))
            }
            let sent = await capture {
                try await quickSystem.send(MergingMigration(), from: source, request: MigrationRequest(destinationPlatform: .current),
                                           to: listener.endpoint)
            }
            let receiverError: (any Error)?
            if case .failure(let error) = await received { receiverError = error } else { receiverError = nil }
            #expect((receiverError as? AppMigrationError)?.code == .unreadableArchive, "\(String(describing: receiverError))")
            if case .failure(let senderError) = sent {
                #expect((senderError as? TransferError)?.code == .remoteFailure, "\(senderError)")
                #expect("\(senderError)".contains("'\(link.member)'"), "the sender is told which member: \(senderError)")
            } else {
                Issue.record("the sender reported success")
            }
            try expectRefused(link, message: receiverError.map { "\($0)" }, destination: destination, containerBefore: before,
                              outside: outside, outsideBefore: outsideBefore)
        }
    }
}

/// Runs `body`, keeping its outcome.
func capture<T: Sendable>(_ body: () async throws -> T) async -> Result<T, any Error> {
    do {
        return .success(try await body())
    } catch {
        return .failure(error)
    }
}

/// Holds the proxy a route made, for the test to read afterwards.
final class ProxyBox: @unchecked Sendable {
    // Written once, before the transfer starts, read after it ends.
    var proxy: CuttingProxy?

    func make(_ target: TransferEndpoint, limit: Int) throws -> TransferEndpoint {
        let proxy = try CuttingProxy(to: target, cutAfter: limit)
        self.proxy = proxy
        return proxy.endpoint
    }
}

/// A seeded generator, so that a failing cut can be replayed from the seed in the message.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
