public import Foundation
import IndexedArchive
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A migration between two processes over TCP: ``send(_:named:from:request:to:sourceApp:progress:)``
/// exports straight onto the connection, ``receive(_:named:into:on:acceptTimeout:idleTimeout:progress:)``
/// imports from it as it arrives (see
/// ``importResources(fromDescriptor:into:using:named:progress:)``). The wire format is described
/// in `TransferFrame.swift`: a 16-byte hello each way, the archive, the sender's half-close, and a
/// status frame back, so that the sender learns whether the import succeeded, and why not.
extension MigrationSystem {
    /// The version of the transfer protocol this code speaks. A peer speaking another is refused
    /// on both sides with ``TransferError`` `.versionMismatch`.
    public static var transferProtocolVersion: UInt32 { TransferFrame.protocolVersion }

    /// How long either side waits for the other's hello.
    static let handshakeTimeout: Duration = .seconds(30)

    /// Connects to a receiver at `endpoint` and streams `exporter`'s export to it.
    ///
    /// - Returns: the export's properties and the receiver's report.
    /// - Throws: ``TransferError`` `.remoteFailure` (the receiver's import failed; the message
    ///   says why), `.connectionLost` (the receiver went away), `.versionMismatch`, `.notAPeer`,
    ///   `.timedOut`, `.system`; or the export's own error (the receiver then fails too, because
    ///   the stream it gets is cut).
    @discardableResult
    public func send<Exporter: ResourcesExportingWithOptions>(
        _ exporter: Exporter, named name: String? = nil, from container: MigrationDataContainer,
        request: MigrationRequestWithOptions<Exporter.OptionsType>, to endpoint: TransferEndpoint,
        sourceApp: MigrationAppIdentifier? = nil, progress: Progress? = nil
    ) async throws -> (exported: DeviceToDeviceExportProperties, receiverMessage: String) {
        let fd = try await TransferSocket.connect(to: endpoint, timeout: Self.handshakeTimeout)
        defer { close(fd) }
        try TransferSocket.write(fd, TransferFrame.hello(), what: "hello")
        guard let hello = try await TransferSocket.read(fd, count: TransferFrame.helloSize, timeout: Self.handshakeTimeout,
                                                        what: "receiver's hello") else {
            throw TransferError(.connectionLost, "the receiver at \(endpoint) closed the connection without answering")
        }
        guard let version = TransferFrame.version(inHello: hello) else {
            throw TransferError(.notAPeer, "\(endpoint) is not an amk receiver: its answer is not an amk transfer hello")
        }
        guard version == TransferFrame.protocolVersion else {
            throw TransferError(.versionMismatch(local: TransferFrame.protocolVersion, remote: version),
                                "the receiver at \(endpoint) speaks transfer protocol version \(version); "
                                    + "this sender speaks version \(TransferFrame.protocolVersion)")
        }
        let settings = self
        // Export and listen for the receiver's status at once: a receiver that fails or vanishes
        // mid-stream stops the export at once instead of after the last block.
        var exported: Result<DeviceToDeviceExportProperties, any Error>?
        var status: Result<StatusFrame?, any Error>?
        var stoppedExport = false
        await withTaskGroup(of: SenderEvent.self) { group in
            group.addTask {
                do {
                    let properties = try await settings.exportResources(
                        of: exporter, named: name, from: container, request: request, toDestination: .fileDescriptor(fd),
                        sourceApp: sourceApp, progress: progress)
                    shutdown(fd, Int32(SHUT_WR))
                    return .exported(.success(properties))
                } catch {
                    // The receiver must see a cut stream, not wait for more.
                    shutdown(fd, Int32(SHUT_WR))
                    return .exported(.failure(error))
                }
            }
            group.addTask {
                do {
                    return .status(.success(try await Self.readStatus(fd, timeout: nil)))
                } catch {
                    return .status(.failure(error))
                }
            }
            while let event = await group.next() {
                switch event {
                case .exported(let result):
                    exported = result
                    if case .failure = result {
                        // Give the receiver a moment to say how it saw the cut, then stop waiting.
                        group.addTask {
                            do {
                                try await Task.sleep(for: .seconds(5))
                                return .gaveUp(nil)
                            } catch {
                                // Cancelled: the status came first. The error goes with the event.
                                return .gaveUp(error)
                            }
                        }
                    }
                case .status(let result):
                    status = result
                    // An answer (or the end of the connection) before the export has finished
                    // means the receiver stopped: the export is stopped, and what it then
                    // reports (a cancellation, or a termination if the extension returned
                    // normally) is a consequence, not the cause.
                    if exported == nil {
                        stoppedExport = true
                        group.cancelAll()
                    }
                case .gaveUp:
                    group.cancelAll()
                }
                if exported != nil, status != nil { group.cancelAll() }
            }
        }
        try Task.checkCancellation()
        return try Self.senderVerdict(exported: exported!, status: status, stoppedExport: stoppedExport, endpoint: endpoint)
    }

    /// What the sender reports, from what its two halves saw.
    private static func senderVerdict(exported: Result<DeviceToDeviceExportProperties, any Error>,
                                      status: Result<StatusFrame?, any Error>?, stoppedExport: Bool,
                                      endpoint: TransferEndpoint) throws -> (DeviceToDeviceExportProperties, String) {
        switch (exported, status) {
        case (.success(let properties), .success(.some(let frame))) where frame.ok:
            return (properties, frame.message)
        case (.failure(let error), _) where !stoppedExport && !isLostConnection(error):
            // The export itself failed (the extension threw, stalled...): that is the cause; the
            // receiver failed because of it.
            throw error
        case (_, .success(.some(let frame))) where !frame.ok:
            throw TransferError(.remoteFailure, "the receiver at \(endpoint) failed to import: \(frame.message)")
        case (.failure(let error), _) where !stoppedExport:
            throw TransferError(.connectionLost, "the connection to the receiver at \(endpoint) was lost: \(error)",
                                underlying: error)
        case (.failure, .failure(let error)):
            throw TransferError(.connectionLost, "the connection to the receiver at \(endpoint) was lost: \(error)",
                                underlying: error)
        case (.success, .failure(let error)):
            throw TransferError(.connectionLost, "the receiver at \(endpoint) did not report the import's outcome: \(error)",
                                underlying: error)
        default:
            throw TransferError(.connectionLost,
                                "the receiver at \(endpoint) closed the connection without reporting the import's outcome")
        }
    }

    /// Whether an export failed only because the connection went away under it.
    private static func isLostConnection(_ error: any Error) -> Bool {
        guard let error = error as? ArchiveError else { return error is CancellationError }
        return error.code == .io(errno: EPIPE) || error.code == .io(errno: ECONNRESET)
    }

    /// Accepts one sender on `listener` and imports what it sends into `container`.
    ///
    /// The sender's hello is checked first (a peer speaking another protocol version is told so
    /// and refused); then the archive is imported as it arrives, and the outcome is sent back. A
    /// sender that goes away or is cut off mid-stream leaves the container as it was, with the
    /// import status `.failure`.
    ///
    /// - Parameters:
    ///   - acceptTimeout: how long to wait for a sender; nil waits for good.
    ///   - idleTimeout: how long the stream may stall before the import fails.
    /// - Returns: what the importer was told (the source app and `sourceVersion`).
    @discardableResult
    public func receive<Importer: ResourcesImporting>(
        _ importer: Importer, named name: String? = nil, into container: MigrationDataContainer,
        on listener: TransferListener, acceptTimeout: Duration? = nil, idleTimeout: Duration = .seconds(60),
        progress: Progress? = nil
    ) async throws -> ResourcesImportRequest {
        let fd = try await listener.accept(timeout: acceptTimeout)
        defer { close(fd) }
        guard let hello = try await TransferSocket.read(fd, count: TransferFrame.helloSize, timeout: Self.handshakeTimeout,
                                                        what: "sender's hello") else {
            throw TransferError(.connectionLost, "the sender closed the connection before saying hello")
        }
        guard let version = TransferFrame.version(inHello: hello) else {
            Self.answer(fd, ok: false, "this is an amk receiver; send with `amk send`")
            throw TransferError(.notAPeer, "the peer is not an amk sender: its first bytes are not an amk transfer hello")
        }
        try TransferSocket.write(fd, TransferFrame.hello(), what: "hello")
        guard version == TransferFrame.protocolVersion else {
            Self.answer(fd, ok: false, "the receiver speaks transfer protocol version \(TransferFrame.protocolVersion), "
                            + "the sender version \(version)")
            throw TransferError(.versionMismatch(local: TransferFrame.protocolVersion, remote: version),
                                "the sender speaks transfer protocol version \(version); "
                                    + "this receiver speaks version \(TransferFrame.protocolVersion)")
        }
        TransferSocket.setIdleTimeout(fd, idleTimeout)
        let request: ResourcesImportRequest
        do {
            request = try await importResources(fromDescriptor: fd, into: container, using: importer, named: name,
                                                progress: progress)
        } catch {
            Self.answer(fd, ok: false, String(describing: error))
            // Let the sender read the answer: closing with its data unread would reset the
            // connection and could destroy the status frame.
            TransferSocket.drain(fd, timeout: .seconds(2))
            throw error
        }
        Self.answer(fd, ok: true, "imported into \(container.containerRootDirectory.path(percentEncoded: false))"
                        + " (source version \(request.sourceVersion.isEmpty ? "unknown" : request.sourceVersion))")
        return request
    }

    /// Sends a status frame and half-closes. A sender that has gone cannot be told; the import's
    /// outcome is recorded in the container either way.
    private static func answer(_ fd: Int32, ok: Bool, _ message: String) {
        try? TransferSocket.write(fd, TransferFrame.status(ok: ok, message: message), what: "status")
        shutdown(fd, Int32(SHUT_WR))
    }

    /// Reads the receiver's status frame; nil if the connection ended without one.
    static func readStatus(_ fd: Int32, timeout: Duration?) async throws -> StatusFrame? {
        guard let header = try await TransferSocket.read(fd, count: 5, timeout: timeout, what: "receiver's status") else {
            return nil
        }
        guard header[0] <= 1 else {
            throw TransferError(.notAPeer, "the receiver sent an unknown status \(header[0])")
        }
        let length = TransferFrame.length(inStatusHeader: header)
        guard length <= TransferFrame.maxMessageBytes else {
            throw TransferError(.notAPeer, "the receiver's status message is too long (\(length) bytes)")
        }
        let text = length == 0 ? [] : try await TransferSocket.read(fd, count: length, timeout: .seconds(10),
                                                                    what: "receiver's status message") ?? []
        return StatusFrame(ok: header[0] == 0, message: String(decoding: text, as: UTF8.self))
    }
}

/// The receiver's answer.
struct StatusFrame: Sendable {
    var ok: Bool
    var message: String
}

/// What one half of a sender saw.
private enum SenderEvent: Sendable {
    case exported(Result<DeviceToDeviceExportProperties, any Error>)
    case status(Result<StatusFrame?, any Error>)
    /// The wait for the status after a failed export ended (with the error that ended it early).
    case gaveUp((any Error)?)
}
