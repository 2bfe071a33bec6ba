public import Foundation
import IndexedArchive
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A migration between two processes over TCP, paired and encrypted:
/// ``send(_:named:from:request:to:pairingCode:sourceApp:idleTimeout:statusTimeout:progress:)``
/// exports straight onto the connection,
/// ``receive(_:named:into:on:pairingCode:acceptTimeout:idleTimeout:maxArchiveBytes:maxFailedPairings:onRefused:progress:)``
/// imports from it as it arrives (see ``importResources(fromDescriptor:into:using:named:progress:)``).
/// The receiver shows a one-time ``PairingCode``; the sender is given it. The wire format is in
/// `TransferFrame.swift` and the cryptography in `SecureChannel.swift`: an X25519 key agreement
/// whose keys mix in the code, each side proving it holds the code before anything else, then
/// ChaCha20-Poly1305 records, the archive's closed by an end record, and the status back.
///
/// Every wait for the peer is bounded, so that no peer, however it misbehaves, holds the other
/// side (or the receiver's container lock) for good: the connection and the whole hello within
/// 30 s, the stream by an idle rule that a trickling peer cannot satisfy (see `TransferRelay`),
/// and the sender's wait for the status by `statusTimeout`. Each failure names what the peer did.
extension MigrationSystem {
    /// The version of the transfer protocol this code speaks. A peer speaking another is refused
    /// on both sides with ``TransferError`` `.versionMismatch`.
    public static var transferProtocolVersion: UInt32 { TransferFrame.protocolVersion }

    /// Connects to a receiver at `endpoint`, pairs with it using the code it shows, and streams
    /// `exporter`'s export to it, encrypted.
    ///
    /// Nothing is exported before the receiver has proved that it holds `pairingCode`.
    /// - Parameters:
    ///   - exporter: the app's export extension.
    ///   - name: the extension's name in errors and metadata; by default its type's name.
    ///   - container: the app's data container, read (and locked) for the export.
    ///   - request: what the receiver's platform asks for.
    ///   - sourceApp: the exporting app's identity, recorded for the importer.
    ///   - progress: as for ``exportResources(of:named:from:request:to:sourceApp:progress:)``.
    ///   - endpoint: the receiver's `HOST:PORT` (a name, IPv4, or IPv6 in brackets).
    ///   - pairingCode: the code the receiver shows.
    ///   - idleTimeout: the receiver must take at least 64 KiB of the archive in each such window
    ///     of time that the sender spends waiting for it, or it is cut off as idle.
    ///   - statusTimeout: how long to wait, once the whole archive has gone, for the receiver to
    ///     report the import's outcome (it runs its importer in that time).
    /// - Returns: the export's properties and the receiver's report.
    /// - Throws: ``TransferError`` `.remoteFailure` (the receiver's import failed; the message
    ///   says why), `.pairingFailed` (the receiver refused the code, or could not prove it holds
    ///   it), `.connectionLost` (the receiver went away), `.timedOut` (no hello, an idle
    ///   receiver, or no status in time), `.tampered` (its status failed authentication),
    ///   `.versionMismatch`, `.notAPeer`, `.invalidAddress`, `.system`; or the export's own error
    ///   (the receiver then fails too, because the stream it gets is cut).
    @discardableResult
    public func send<Exporter: ResourcesExportingWithOptions>(
        _ exporter: Exporter, named name: String? = nil, from container: MigrationDataContainer,
        request: MigrationRequestWithOptions<Exporter.OptionsType>, to endpoint: TransferEndpoint,
        pairingCode: PairingCode, sourceApp: MigrationAppIdentifier? = nil, idleTimeout: Duration = .seconds(60),
        statusTimeout: Duration = .seconds(300), progress: Progress? = nil
    ) async throws -> (exported: DeviceToDeviceExportProperties, receiverMessage: String) {
        try await send(
            exporter, named: name, from: container, request: request, to: endpoint, pairingCode: pairingCode,
            sourceApp: sourceApp, limits: TransferLimits(idle: idleTimeout, status: statusTimeout), progress: progress)
    }

    /// ``send(_:named:from:request:to:pairingCode:sourceApp:idleTimeout:statusTimeout:progress:)``
    /// with every limit given, for tests.
    func send<Exporter: ResourcesExportingWithOptions>(
        _ exporter: Exporter, named name: String? = nil, from container: MigrationDataContainer,
        request: MigrationRequestWithOptions<Exporter.OptionsType>, to endpoint: TransferEndpoint,
        pairingCode: PairingCode, sourceApp: MigrationAppIdentifier? = nil, limits: TransferLimits, progress: Progress? = nil
    ) async throws -> (exported: DeviceToDeviceExportProperties, receiverMessage: String) {
        let handshakeDeadline = ContinuousClock.now + limits.handshake
        let fd = try await TransferSocket.connect(to: endpoint, timeout: limits.handshake)
        defer { close(fd) }
        let channel = try await TransferHandshake.sender(
            fd, endpoint: endpoint, code: pairingCode, until: handshakeDeadline,
            timeout: limits.handshake)

        // The engine writes the archive into one end of a local pair; the relay moves it onto
        // the connection and cuts off a receiver that stops taking it.
        let (engineEnd, relayEnd) = try TransferSocket.socketPair()
        defer { close(engineEnd) }
        let relay: TransferRelay
        do {
            relay = try TransferRelay(
                from: relayEnd, to: fd, codec: .seal(channel.sealer), limits: limits, owning: relayEnd,
                name: "amk-send-relay")
        } catch {
            close(relayEnd)
            throw error
        }
        let settings = self
        // Export and watch the connection at once: a receiver that answers (it failed) or goes
        // away mid-stream stops the export at once instead of after the last block.
        var exported: Result<DeviceToDeviceExportProperties, any Error>?
        var stoppedExport = false
        // A cancelled send stops the relay at once: the engine may be blocked writing into a full
        // pair because the receiver stopped reading, and only the relay closing its end of the
        // pair releases that write (the export's cancellation alone waits for it).
        await withTaskCancellationHandler {
            await withTaskGroup(of: SenderEvent.self) { group in
                group.addTask {
                    do {
                        return .exported(
                            .success(
                                try await settings.exportResources(
                                    of: exporter, named: name, from: container, request: request, toDestination: .fileDescriptor(engineEnd),
                                    sourceApp: sourceApp, progress: progress)))
                    } catch {
                        return .exported(.failure(error))
                    }
                }
                group.addTask {
                    // Nothing is due from the receiver before the status: anything it sends, or its
                    // end, means it stopped.
                    do {
                        _ = try await TransferSocket.waitReadable(fd)
                        return .receiverStirred(true)
                    } catch is CancellationError {
                        // The export ended first and the group stopped the watch; a cancellation of
                        // the whole send is seen after the group.
                        return .receiverStirred(false)
                        // cancellation: the clause above takes CancellationError; this one is a failing poll
                    } catch {
                        // The status read says what became of the connection.
                        return .receiverStirred(true)
                    }
                }
                while let event = await group.next() {
                    switch event {
                    case .exported(let result):
                        exported = result
                        // The end of the archive, or the cut the receiver must see if the export
                        // failed: the relay passes everything on, then half-closes the connection.
                        shutdown(engineEnd, Int32(SHUT_WR))
                        group.cancelAll()
                    case .receiverStirred(let spoke):
                        // An answer (or the end of the connection) before the export has finished
                        // means the receiver stopped: the export is stopped, and what it then
                        // reports (a cancellation, a broken pipe) is a consequence, not the cause.
                        if spoke && exported == nil {
                            stoppedExport = true
                            relay.stop()
                            group.cancelAll()
                        }
                    }
                }
            }
        } onCancel: {
            relay.stop()
        }
        // The relay must let go of the connection before it is read or closed: after a normal
        // export it is passing on the last bytes, bounded by the idle rule.
        let relayed = await relay.ending()
        try Task.checkCancellation()
        guard let exported else { throw CancellationError() }
        let normal: Bool
        if case .success = exported, case .finished = relayed, !stoppedExport { normal = true } else { normal = false }
        let statusWait = normal ? limits.status : min(limits.status, limits.statusAfterFailure)
        let status = try await Self.readStatus(
            fd, opener: channel.opener, until: ContinuousClock.now + statusWait, from: endpoint)
        return try Self.senderVerdict(
            exported: exported, relayed: relayed, status: status, statusWait: statusWait,
            stoppedExport: stoppedExport, endpoint: endpoint)
    }

    /// What the sender reports, from what its export, its relay and the status read saw.
    private static func senderVerdict(
        exported: Result<DeviceToDeviceExportProperties, any Error>,
        relayed: TransferRelay.Ending, status: StatusOutcome, statusWait: Duration,
        stoppedExport: Bool, endpoint: TransferEndpoint
    ) throws -> (DeviceToDeviceExportProperties, String) {
        let sent = "\(relayed.bytes) bytes of the archive"
        if case .success(let properties) = exported, case .frame(let frame) = status, frame.ok {
            return (properties, frame.message)
        }
        if case .failure(let error) = exported, !stoppedExport, !isLostConnection(error) {
            // The export itself failed (the extension threw, stalled...): that is the cause; the
            // receiver failed because of it.
            throw error
        }
        if case .frame(let frame) = status, !frame.ok {
            throw TransferError(.remoteFailure, "the receiver at \(endpoint) failed to import: \(frame.message)")
        }
        // What the relay saw of the receiver, if the stream ended early because of it.
        switch relayed {
        case .idle(let window, let moved, _):
            throw TransferError(
                .timedOut,
                "the receiver at \(endpoint) was idle for \(TransferSocket.seconds(window)): it took "
                    + "\(moved) bytes in \(TransferSocket.seconds(window)), after \(sent)")
        case .peerClosed:
            throw TransferError(
                .connectionLost,
                "the connection to the receiver at \(endpoint) was lost: it closed the "
                    + "connection after \(sent) had been sent")
        case .reset:
            throw TransferError(
                .connectionLost,
                "the connection to the receiver at \(endpoint) was lost: it reset the "
                    + "connection after \(sent) had been sent")
        case .failed(let error, _):
            throw TransferError(
                error.code, "\(error.message) on the connection to the receiver at \(endpoint), after \(sent)",
                underlying: error)
        case .finished, .stopped, .localClosed, .truncated, .tampered, .tooLarge:
            break
        }
        switch status {
        case .frame(let frame):
            // A success the sender cannot share: its export failed after the receiver was done.
            // An export we stopped because the receiver answered early failed only of that (as a
            // cancellation, or an extension "that ignored it"): the receiver's early word is the cause.
            if case .failure(let error) = exported, !stoppedExport { throw error }
            throw TransferError(.notAPeer, "the receiver at \(endpoint) reported success for an incomplete archive: \(frame.message)")
        case .timedOut(let got) where got == 0:
            if case .failure(let error) = exported {
                throw TransferError(
                    .connectionLost, "the connection to the receiver at \(endpoint) was lost: \(error)",
                    underlying: error)
            }
            throw TransferError(
                .timedOut,
                "no status from the receiver at \(endpoint) within \(TransferSocket.seconds(statusWait)) "
                    + "after the end of the archive (all \(sent) had been sent); its import may still be running")
        case .timedOut(let got):
            throw TransferError(
                .timedOut,
                "the receiver at \(endpoint) sent only \(got) bytes of its status "
                    + "within \(TransferSocket.seconds(statusWait))")
        case .closed(let got) where got == 0:
            throw TransferError(
                .connectionLost,
                "the receiver at \(endpoint) closed the connection after \(sent) had been sent, "
                    + "without reporting the import's outcome")
        case .closed(let got):
            throw TransferError(
                .connectionLost,
                "the receiver at \(endpoint) closed the connection in the middle of its "
                    + "status, after \(got) bytes of it")
        case .reset:
            throw TransferError(
                .connectionLost,
                "the connection to the receiver at \(endpoint) was lost: it reset the "
                    + "connection without reporting the import's outcome (after \(sent))")
        }
    }

    /// Whether an export failed only because the connection went away under it.
    private static func isLostConnection(_ error: any Error) -> Bool {
        guard let error = error as? ArchiveError else { return error is CancellationError }
        return error.code == .io(errno: EPIPE) || error.code == .io(errno: ECONNRESET)
    }

    /// Waits on `listener` for the sender holding `pairingCode`, and imports what it sends into
    /// `container`.
    ///
    /// Each connection first goes through the handshake: a sender proves it holds the code before
    /// anything else. A connection that is not an amk sender, speaks another version (it is told
    /// the receiver's), or never finishes the handshake is closed and the wait goes on; so is a
    /// sender with a wrong code, up to `maxFailedPairings` of them, after which the receive fails.
    /// Once a sender has paired, the listener stops listening (a second sender is refused) and the
    /// archive is imported as it arrives, and the outcome is sent back, encrypted. A sender that
    /// goes away, is cut off mid-stream, goes idle, sends a record that fails authentication, or
    /// sends more than the limit leaves the container as it was, with the import status `.failure`.
    ///
    /// - Parameters:
    ///   - importer: the app's import extension.
    ///   - name: the extension's name in errors; by default its type's name.
    ///   - container: the container imported into, locked from before the first sender is accepted
    ///     until the import is over (a second receive or an import into it is refused at once).
    ///   - listener: where senders connect.
    ///   - pairingCode: the code to show the person at the sending side (``PairingCode/random()``).
    ///   - acceptTimeout: how long to wait for the paired sender; nil waits for good.
    ///   - idleTimeout: the sender must deliver at least 64 KiB in each such window of time that
    ///     the receiver spends waiting for it (time the receiver spends on its own work does not
    ///     count), or it is cut off and the import fails.
    ///   - maxArchiveBytes: the largest archive accepted; the free space of the container's
    ///     volume bounds it too, whichever is smaller. A sender going past it is cut off.
    ///   - maxFailedPairings: senders with a wrong code tolerated before giving up.
    ///   - onRefused: told of each connection closed before pairing, and why (for a log).
    ///   - progress: mirrors the import, as for ``importResources(fromDescriptor:into:using:named:progress:)``.
    /// - Returns: what the importer was told (the source app and `sourceVersion`).
    /// - Throws: ``TransferError`` `.pairingFailed` (too many wrong codes), `.timedOut` (no paired
    ///   sender in time, or an idle one), `.connectionLost` (the stream ended without its end
    ///   record), `.tampered`, `.tooLarge`; or the import's own error.
    @discardableResult
    public func receive<Importer: ResourcesImporting>(
        _ importer: Importer, named name: String? = nil, into container: MigrationDataContainer,
        on listener: TransferListener, pairingCode: PairingCode, acceptTimeout: Duration? = nil,
        idleTimeout: Duration = .seconds(60), maxArchiveBytes: UInt64? = nil, maxFailedPairings: Int = 5,
        onRefused: (@Sendable (TransferError) -> Void)? = nil, progress: Progress? = nil
    ) async throws -> ResourcesImportRequest {
        var limits = TransferLimits(idle: idleTimeout)
        if let maxArchiveBytes { limits.maxArchiveBytes = maxArchiveBytes }
        limits.maxFailedPairings = maxFailedPairings
        return try await receive(
            importer, named: name, into: container, on: listener, pairingCode: pairingCode,
            acceptTimeout: acceptTimeout, limits: limits, onRefused: onRefused, progress: progress)
    }

    /// ``receive(_:named:into:on:pairingCode:acceptTimeout:idleTimeout:maxArchiveBytes:maxFailedPairings:onRefused:progress:)``
    /// with every limit given, for tests.
    func receive<Importer: ResourcesImporting>(
        _ importer: Importer, named name: String? = nil, into container: MigrationDataContainer,
        on listener: TransferListener, pairingCode: PairingCode, acceptTimeout: Duration? = nil, limits: TransferLimits,
        onRefused: (@Sendable (TransferError) -> Void)? = nil, progress: Progress? = nil
    ) async throws -> ResourcesImportRequest {
        // The container is checked and locked before any sender is accepted: a second receive, or
        // an import, into the same container is refused now, not after a pairing and a transfer.
        let extensionName = name ?? Self.defaultName(of: importer)
        try await HostIO.run { try container.checkKnown(extensionName: extensionName) }
        return try await ContainerLock.reserving(container, extensionName: extensionName) {
            try await receiveReserved(
                importer, named: name, into: container, on: listener, pairingCode: pairingCode,
                acceptTimeout: acceptTimeout, limits: limits, onRefused: onRefused, progress: progress)
        }
    }

    /// The receive, once its container is reserved.
    private func receiveReserved<Importer: ResourcesImporting>(
        _ importer: Importer, named name: String?, into container: MigrationDataContainer,
        on listener: TransferListener, pairingCode: PairingCode, acceptTimeout: Duration?, limits: TransferLimits,
        onRefused: (@Sendable (TransferError) -> Void)?, progress: Progress?
    ) async throws -> ResourcesImportRequest {
        let maxBytes = min(limits.maxArchiveBytes, Self.freeSpace(of: container))
        let (fd, channel) = try await pairedSender(
            on: listener, code: pairingCode, acceptTimeout: acceptTimeout,
            limits: limits, onRefused: onRefused)
        defer { close(fd) }
        // Paired: the code has done its work, and nobody else gets in.
        listener.stopListening()
        // The engine reads the archive from one end of a local pair; the relay fills it from the
        // connection, opening the records, and cuts off a sender that trickles or stalls.
        let (engineEnd, relayEnd) = try TransferSocket.socketPair()
        defer { close(engineEnd) }
        let relay: TransferRelay
        do {
            relay = try TransferRelay(
                from: fd, to: relayEnd, codec: .open(channel.opener, maxBytes: maxBytes), limits: limits,
                owning: relayEnd, name: "amk-receive-relay")
        } catch {
            close(relayEnd)
            throw error
        }
        let imported = await capture {
            try await importResources(
                fromDescriptor: engineEnd, into: container, using: importer, named: name,
                progress: progress,
                onceReceived: {
                    // The engine saw the stream end, which the relay gives it however it ended: a
                    // sender that holds the code could cut the stream after the archive's last
                    // bytes (releasing them with an empty record) and have it imported without
                    // its end record. Only the end record completes a transfer.
                    guard case .finished = await relay.ending() else {
                        throw AppMigrationError(
                            .unreadableArchive, "the stream did not end with the sender's end record", extensionName: name)
                    }
                })
        }
        // An import that failed before the stream's end leaves the relay running: stop it, and
        // let go of the connection before answering on it.
        relay.stop()
        let relayed = await relay.ending()
        switch imported {
        case .success(let request):
            Self.answer(
                fd, channel, ok: true,
                "imported into \(container.containerRootDirectory.path(percentEncoded: false))"
                    + " (source version \(request.sourceVersion.isEmpty ? "unknown" : request.sourceVersion))")
            return request
        case .failure(let failure):
            let error = Self.receiverError(failure, relayed: relayed)
            Self.answer(fd, channel, ok: false, Self.statusMessage(for: error))
            // Let the sender read the answer: closing with its data unread would reset the
            // connection and could destroy the status frame.
            try await TransferSocket.drain(fd, timeout: limits.drain)
            throw error
        }
    }

    /// Accepts connections until one completes the handshake with the code: the connection and
    /// its channel. Everything else is closed and reported to `onRefused`.
    ///
    /// Handshakes run side by side (at most ``TransferLimits/concurrentHandshakes``), so a peer
    /// that connects and says nothing cannot hold the real sender back until its handshake
    /// deadline: the listener keeps accepting while it waits, and when every slot is taken and a
    /// connection waits, the oldest connection that has not sent its hello gives up its slot at
    /// once, or else the oldest handshake once it has had ``TransferLimits/handshakeSlotAge``.
    private func pairedSender(
        on listener: TransferListener, code: PairingCode, acceptTimeout: Duration?,
        limits: TransferLimits, onRefused: (@Sendable (TransferError) -> Void)?
    ) async throws -> (Int32, SecureChannel) {
        let deadline = acceptTimeout.map { ContinuousClock.now + $0 }
        let endpoint = listener.endpoint
        let timedOut = TransferError(
            .timedOut,
            "no sender with the pairing code connected to \(endpoint) within \(TransferSocket.seconds(acceptTimeout ?? .zero))")
        return try await withThrowingTaskGroup(of: PairingEvent.self) { group in
            func accept() {
                group.addTask {
                    let left = deadline.map { ContinuousClock.now.duration(to: $0) }
                    if let left, left <= .zero { return .accepted(.failure(timedOut)) }
                    do {
                        return .accepted(.success(try await listener.accept(timeout: left)))
                    } catch let error as TransferError where error.code == .timedOut {
                        return .accepted(.failure(timedOut))
                        // cancellation: a cancelled accept is reported as such, and the loop below rethrows it
                    } catch {
                        return .accepted(.failure(error))
                    }
                }
            }
            var accepting = false
            var wrongCodes = 0
            var failure: (any Error)?
            var paired: (Int32, SecureChannel)?
            /// Handshakes under way, with when each began.
            var inFlight: [Int32: ContinuousClock.Instant] = [:]
            /// Handshakes closed to let a waiting connection in; their tasks are ending.
            var evicted: Set<Int32> = []
            /// A connection accepted while every handshake slot was taken.
            var waiting: Int32?
            var ticking = false
            /// The connections whose sender has sent its hello, told by their handshakes' tasks.
            let spoke = Speakers()
            /// Who each connection under way comes from, for its refusal: an operator watching a
            /// receiver sees who guesses codes or floods it.
            var peers: [Int32: TransferEndpoint] = [:]
            /// Evicted connections not yet reported, and when the last report was: a flood is
            /// reported at most once a second, not once a connection.
            var unreported = 0
            var lastReport: ContinuousClock.Instant?
            /// Refusals of connections that were no sender of ours (an HTTP client, another
            /// version, a key that is not one): up to ``refusalsPerSecond`` each second are
            /// reported one by one, and the others counted into one line, so that a small peer
            /// making thousands of connections cannot fill the log (it wrote a line each). Wrong
            /// codes are always reported: there can be only ``TransferLimits/maxFailedPairings``.
            var refusalWindow: ContinuousClock.Instant?
            var refusedInWindow = 0
            var quietRefusals = 0
            func reportQuietRefusals() {
                guard quietRefusals > 0 else { return }
                onRefused?(
                    TransferError(
                        .notAPeer,
                        "\(quietRefusals) more \(quietRefusals == 1 ? "connection" : "connections") to \(endpoint) "
                            + "\(quietRefusals == 1 ? "was" : "were") refused, past \(Self.refusalsPerSecond) a second, without a line of their own"
                    ))
                quietRefusals = 0
            }
            /// Closes the connection `fd` and drops what was kept of it, before its number can be
            /// reused by the next connection accepted; returns whom it came from.
            func closeConnection(_ fd: Int32) -> TransferEndpoint? {
                spoke.remove(fd)
                close(fd)
                return peers.removeValue(forKey: fd)
            }
            func start(_ fd: Int32) {
                inFlight[fd] = .now
                group.addTask {
                    do {
                        let channel = try await TransferHandshake.receiver(
                            fd, code: code, until: ContinuousClock.now + limits.handshake, timeout: limits.handshake,
                            spoke: { spoke.insert(fd) })
                        return .handshake(fd, .success(channel))
                        // cancellation: the handshake's outcome goes to the loop, which closes the connection
                    } catch {
                        return .handshake(fd, .failure(error))
                    }
                }
            }
            /// Closes the handshake of `fd` for the waiting connection, and starts that one's.
            func evict(_ fd: Int32) {
                inFlight[fd] = nil
                evicted.insert(fd)
                // Ends its handshake's reads at once; the loop closes it when it returns.
                shutdown(fd, Int32(SHUT_RDWR))
                if let next = waiting {
                    waiting = nil
                    start(next)
                }
            }
            /// Starts the waiting connection's handshake when a slot is free, or frees the slot of
            /// the oldest connection that has not sent its hello once it has had
            /// ``TransferLimits/silentSlotAge`` (a real sender sends it as it connects), or else of
            /// the oldest handshake once it has had ``TransferLimits/handshakeSlotAge`` (a real
            /// sender completes it in milliseconds);
            /// then accepts the next connection. So connections that say nothing hold a slot only
            /// until another comes, and those that send a hello and no more only while nobody
            /// waits and only for that long: they cannot keep the real sender out until their
            /// own 30 s deadline (nor until the sender's, which is as long).
            func fill() {
                guard paired == nil, failure == nil else { return }
                if let fd = waiting {
                    // A hello that has arrived but that its handshake's task has not read yet
                    // counts: under a flood of connections that had all sent theirs, the real
                    // sender, accepted a moment before the next one, was the only connection
                    // still "silent", and was closed at once ("closed the connection after 0 of
                    // the hello's 16 bytes").
                    let talking = spoke.all.union(inFlight.keys.filter { TransferSocket.hasBytesWaiting($0) })
                    let silent = inFlight.filter { !talking.contains($0.key) }.min(by: { $0.value < $1.value })
                    let oldest = inFlight.min(by: { $0.value < $1.value })
                    if inFlight.count < limits.concurrentHandshakes {
                        waiting = nil
                        start(fd)
                    } else if let (silent, began) = silent, began + limits.silentSlotAge <= .now {
                        evict(silent)
                    } else if let (oldest, began) = oldest {
                        let due = min(
                            began + limits.handshakeSlotAge, silent.map { $0.value + limits.silentSlotAge } ?? .now + .seconds(3600))
                        if began + limits.handshakeSlotAge <= .now {
                            evict(oldest)
                        } else if !ticking {
                            ticking = true
                            group.addTask {
                                do {
                                    try await Task.sleep(until: due, clock: .continuous)
                                    // cancellation: the group is being cancelled; the loop ends without looking at this tick
                                } catch {
                                    return .tick
                                }
                                return .tick
                            }
                        }
                    }
                }
                if waiting == nil, !accepting {
                    accepting = true
                    accept()
                }
            }
            fill()
            while let event = try await group.next() {
                switch event {
                case .accepted(.success(let fd)):
                    accepting = false
                    guard paired == nil, failure == nil else {
                        close(fd)
                        continue
                    }
                    peers[fd] = TransferEndpoint.peer(of: fd)
                    waiting = fd
                    fill()
                case .accepted(.failure(let error)):
                    accepting = false
                    if paired == nil, failure == nil { failure = error }
                    group.cancelAll()
                case .tick:
                    ticking = false
                    fill()
                case .handshake(let fd, _) where evicted.contains(fd):
                    evicted.remove(fd)
                    _ = closeConnection(fd)
                    unreported += 1
                    if lastReport.map({ ContinuousClock.now - $0 >= .seconds(1) }) ?? true {
                        lastReport = .now
                        onRefused?(
                            TransferError(
                                .timedOut,
                                "\(unreported == 1 ? "a connection" : "\(unreported) connections") to \(endpoint) had not completed "
                                    + "the handshake while another waited (\(limits.concurrentHandshakes) run side by side); "
                                    + (unreported == 1 ? "it was closed" : "they were closed")))
                        unreported = 0
                    }
                    fill()
                case .handshake(let fd, .success(let channel)) where paired == nil && failure == nil:
                    inFlight[fd] = nil
                    paired = (fd, channel)
                    group.cancelAll()
                case .handshake(let fd, let outcome):
                    inFlight[fd] = nil
                    let peer = closeConnection(fd)
                    guard paired == nil, failure == nil else { continue }
                    guard case .failure(let error) = outcome, let refusal = error as? TransferError else {
                        if case .failure(let error) = outcome { failure = error }
                        group.cancelAll()
                        continue
                    }
                    let report =
                        peer.map { TransferError(refusal.code, "\(refusal.message) (the connection from \($0))", underlying: refusal) }
                        ?? refusal
                    if refusal.code == .pairingFailed {
                        onRefused?(report)
                    } else {
                        if refusalWindow.map({ ContinuousClock.now - $0 >= .seconds(1) }) ?? true {
                            reportQuietRefusals()
                            refusalWindow = .now
                            refusedInWindow = 0
                        }
                        refusedInWindow += 1
                        if refusedInWindow <= Self.refusalsPerSecond {
                            onRefused?(report)
                        } else {
                            quietRefusals += 1
                        }
                    }
                    if refusal.code == .pairingFailed {
                        wrongCodes += 1
                        if wrongCodes >= limits.maxFailedPairings {
                            failure = TransferError(
                                .pairingFailed,
                                "\(wrongCodes) senders gave a wrong pairing code; stopped listening "
                                    + "on \(endpoint) (start again for a new code)")
                            group.cancelAll()
                            continue
                        }
                    }
                    fill()
                }
            }
            if let waiting { close(waiting) }
            reportQuietRefusals()
            if let paired { return paired }
            throw failure ?? CancellationError()
        }
    }

    /// Connections refused, other than for a wrong code, that are reported one by one in any
    /// second; the rest of that second's are counted into one report.
    static let refusalsPerSecond = 10

    /// The free space of the volume holding `container`, or the largest value if unknown.
    private static func freeSpace(of container: MigrationDataContainer) -> UInt64 {
        var info = statvfs()
        guard statvfs(container.containerRootDirectory.deletingLastPathComponent().path(percentEncoded: false), &info) == 0 else {
            return .max
        }
        return UInt64(info.f_bavail) * UInt64(info.f_frsize)
    }

    /// The receiver's error: the import's, or, when the import failed only because the relay
    /// ended the stream, what the sender (or someone on the way) did to end it.
    private static func receiverError(_ error: any Error, relayed: TransferRelay.Ending) -> any Error {
        guard let cut = error as? AppMigrationError, cut.code == .unreadableArchive else { return error }
        let bytes = "\(relayed.bytes) bytes of the archive"
        switch relayed {
        case .tampered(let tampered, _):
            return TransferError(.tampered, "\(tampered.message), after \(bytes); nothing was imported", underlying: error)
        case .tooLarge(let limit, _):
            return TransferError(
                .tooLarge,
                "the sender's archive is larger than this receiver accepts (\(limit) bytes: "
                    + "the free space of the container's volume, or the limit set); nothing was imported",
                underlying: error)
        case .truncated:
            return TransferError(
                .connectionLost, "the sender's stream ended without its end record after \(bytes): \(error)",
                underlying: error)
        case .idle(let window, let moved, _):
            // The import's error (the archive broke off) is only the consequence of the cut.
            return TransferError(
                .timedOut,
                "the sender was idle for \(TransferSocket.seconds(window)) (\(moved) bytes in "
                    + "\(TransferSocket.seconds(window)); \(bytes) had reached the import), so the import was stopped",
                underlying: error)
        case .reset:
            return TransferError(.connectionLost, "the sender reset the connection after \(bytes): \(error)", underlying: error)
        case .failed(let failure, _):
            return TransferError(failure.code, "\(failure.message) after \(bytes): \(error)", underlying: error)
        case .finished, .peerClosed, .localClosed, .stopped:
            // The archive arrived whole and authentic: the refusal is the import's own.
            return error
        }
    }

    /// What the sender is told of an import that failed with `error`. A cancellation (Ctrl-C or
    /// SIGTERM on the receiver, or its caller's task cancelled) describes itself as
    /// `CancellationError()`, a Swift type's name that tells a user on the other device nothing.
    static func statusMessage(for error: any Error) -> String {
        if error is CancellationError { return "the import was cancelled on the receiver (interrupted or stopped)" }
        return String(describing: error)
    }

    /// Sends the status record and half-closes. A sender that has gone cannot be told; the
    /// import's outcome is recorded in the container either way.
    private static func answer(_ fd: Int32, _ channel: SecureChannel, ok: Bool, _ message: String) {
        let text = Array(message.utf8.prefix(TransferFrame.maxMessageBytes))
        if let record = try? channel.sealer.seal(ok ? .statusOK : .statusFailed, text) {
            try? TransferSocket.write(fd, record, what: "status")
        }
        shutdown(fd, Int32(SHUT_WR))
    }

    /// Reads the receiver's status record, all of it before `deadline`.
    /// - Throws: ``TransferError`` `.tampered` for a record that fails authentication or is not
    ///   a status; `CancellationError`.
    static func readStatus(
        _ fd: Int32, opener: RecordOpener, until deadline: ContinuousClock.Instant, from endpoint: TransferEndpoint
    ) async throws -> StatusOutcome {
        let header: [UInt8]
        switch try await TransferSocket.receive(fd, count: 4, until: deadline) {
        case .complete(let bytes): header = bytes
        case .closed(let bytes): return .closed(bytes.count)
        case .reset(let bytes): return .reset(bytes.count)
        case .timedOut(let bytes): return .timedOut(bytes.count)
        }
        // A status is a message of at most `maxMessageBytes`: a longer one is not read (what a
        // hostile receiver sends must not be printed by the kilobyte).
        guard let length = RecordOpener.sealedLength(header), length <= 1 + TransferFrame.maxMessageBytes + SecureChannel.tagSize
        else {
            throw TransferError(
                .tampered,
                "the receiver at \(endpoint) announced a status longer than the protocol's \(TransferFrame.maxMessageBytes) bytes")
        }
        let sealed: [UInt8]
        switch try await TransferSocket.receive(fd, count: length, until: deadline) {
        case .complete(let bytes): sealed = bytes
        case .closed(let bytes): return .closed(4 + bytes.count)
        case .reset(let bytes): return .reset(4 + bytes.count)
        case .timedOut(let bytes): return .timedOut(4 + bytes.count)
        }
        let opened: (SecureChannel.RecordType, [UInt8])
        do {
            opened = try opener.open(header: header, sealed: sealed)
        } catch {
            throw TransferError(error.code, "the status from the receiver at \(endpoint) was refused: \(error.message)", underlying: error)
        }
        let (type, payload) = opened
        guard type == .statusOK || type == .statusFailed else {
            throw TransferError(.tampered, "the receiver at \(endpoint) answered with a record that is not a status")
        }
        return .frame(StatusFrame(ok: type == .statusOK, message: String(decoding: payload, as: UTF8.self)))
    }
}

/// Runs `body`, keeping its outcome, so that cleanup that must await can run before it is thrown.
private func capture<T: Sendable>(_ body: () async throws -> T) async -> Result<T, any Error> {
    do {
        return .success(try await body())
    } catch {
        return .failure(error)
    }
}

/// The receiver's answer.
struct StatusFrame: Sendable {
    var ok: Bool
    var message: String
}

/// What the receiver sent back, or how far it got.
enum StatusOutcome: Sendable {
    case frame(StatusFrame)
    /// The receiver closed the connection after this many bytes of a status.
    case closed(Int)
    /// The receiver reset the connection after this many bytes of a status.
    case reset(Int)
    /// The deadline passed with this many bytes of a status.
    case timedOut(Int)
}

/// What one half of a sender saw.
private enum SenderEvent: Sendable {
    case exported(Result<DeviceToDeviceExportProperties, any Error>)
    /// The receiver sent something or closed (true), or the watch was cancelled or failed.
    case receiverStirred(Bool)
}

/// The connections whose sender has sent its hello, as their handshakes' tasks tell the loop
/// that pairs. `Sendable`: the set is behind a `Mutex`.
private final class Speakers: Sendable {
    private let members = Mutex<Set<Int32>>([])
    var all: Set<Int32> { members.withLock { $0 } }
    func insert(_ fd: Int32) { _ = members.withLock { $0.insert(fd) } }
    func remove(_ fd: Int32) { _ = members.withLock { $0.remove(fd) } }
}

/// What one task of the receiver's pairing saw.
private enum PairingEvent: Sendable {
    /// A connection was accepted, or the wait for one ended.
    case accepted(Result<Int32, any Error>)
    /// A connection's handshake ended.
    case handshake(Int32, Result<SecureChannel, any Error>)
    /// The oldest handshake may have had its time, while a connection waits for a slot.
    case tick
}
