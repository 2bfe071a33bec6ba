import Crypto

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Both sides of the pairing handshake (the hellos and the confirmations of `TransferFrame`),
/// ending in the ``SecureChannel`` everything after it travels in.
///
/// Every read has the one deadline of the whole handshake, so a peer sending a byte a second
/// cannot stretch it.
enum TransferHandshake {
    /// The sender's side: its hello, the receiver's, then each side's proof of the code, the
    /// sender's first.
    /// - Throws: ``TransferError``: `.pairingFailed` when the receiver refuses the code or cannot
    ///   prove it holds it; `.versionMismatch`, `.notAPeer`, `.connectionLost`, `.timedOut`.
    static func sender(
        _ fd: Int32, endpoint: TransferEndpoint, code: PairingCode,
        until deadline: ContinuousClock.Instant, timeout: Duration
    ) async throws -> SecureChannel {
        let key = Curve25519.KeyAgreement.PrivateKey()
        let hello = TransferFrame.hello(publicKey: Array(key.publicKey.rawRepresentation))
        try TransferSocket.write(fd, hello, what: "hello")
        let peer = "the receiver at \(endpoint)"
        let header = try await read(fd, TransferFrame.helloHeaderSize, what: "hello", from: peer, until: deadline, timeout: timeout)
        guard let version = TransferFrame.version(inHello: header) else {
            throw TransferError(.notAPeer, "\(endpoint) is not an amk receiver: its answer is not an amk transfer hello")
        }
        guard version == TransferFrame.protocolVersion else {
            throw TransferError(
                .versionMismatch(local: TransferFrame.protocolVersion, remote: version),
                "\(peer) speaks transfer protocol version \(version); "
                    + "this sender speaks version \(TransferFrame.protocolVersion)")
        }
        if let refusal = TransferFrame.refusal(ofFlags: TransferFrame.flags(inHello: header), from: peer) { throw refusal }
        let publicKey = try await read(
            fd, TransferFrame.publicKeySize, what: "hello's key", from: peer, until: deadline,
            timeout: timeout)
        let channel = try SecureChannel(
            role: .sender, privateKey: key, peerPublicKey: publicKey, code: code,
            senderHello: hello, receiverHello: header + publicKey)
        try TransferSocket.write(fd, channel.ownConfirmation, what: "confirmation")
        let confirmation: [UInt8]
        do {
            confirmation = try await read(
                fd, SecureChannel.confirmationSize, what: "confirmation", from: peer,
                until: deadline, timeout: timeout)
        } catch let error as TransferError where error.code == .connectionLost {
            throw TransferError(
                .pairingFailed,
                "\(peer) refused the pairing code: check it against the code the "
                    + "receiver shows, unless another sender had paired with it first (\(error.message))",
                underlying: error)
        }
        guard channel.isPeerConfirmation(confirmation) else {
            throw TransferError(
                .pairingFailed,
                "\(peer) cannot prove it holds the pairing code: it is not the receiver "
                    + "that showed it; nothing was sent")
        }
        return channel
    }

    /// The receiver's side, on a connection just accepted.
    /// - Throws: ``TransferError`` `.pairingFailed` when the sender's proof of the code is wrong
    ///   (an attempt that counts); `.versionMismatch` (the sender is told the receiver's version),
    ///   `.notAPeer`, `.connectionLost`, `.timedOut` for connections that never got that far.
    ///
    /// `spoke` is called once the sender's hello has come: a connection that has said nothing can
    /// be closed first when others wait (see `pairedSender`).
    static func receiver(
        _ fd: Int32, code: PairingCode, until deadline: ContinuousClock.Instant,
        timeout: Duration, spoke: @Sendable () -> Void = {}
    ) async throws -> SecureChannel {
        let peer = "the sender"
        let header = try await read(fd, TransferFrame.helloHeaderSize, what: "hello", from: peer, until: deadline, timeout: timeout)
        guard let version = TransferFrame.version(inHello: header) else {
            throw TransferError(.notAPeer, "the peer is not an amk sender: its first bytes are not an amk transfer hello")
        }
        spoke()
        let key = Curve25519.KeyAgreement.PrivateKey()
        let hello = TransferFrame.hello(publicKey: Array(key.publicKey.rawRepresentation))
        try TransferSocket.write(fd, hello, what: "hello")
        guard version == TransferFrame.protocolVersion else {
            throw TransferError(
                .versionMismatch(local: TransferFrame.protocolVersion, remote: version),
                "the sender speaks transfer protocol version \(version); "
                    + "this receiver speaks version \(TransferFrame.protocolVersion)")
        }
        if let refusal = TransferFrame.refusal(ofFlags: TransferFrame.flags(inHello: header), from: peer) { throw refusal }
        let publicKey = try await read(
            fd, TransferFrame.publicKeySize, what: "hello's key", from: peer, until: deadline,
            timeout: timeout)
        let channel = try SecureChannel(
            role: .receiver, privateKey: key, peerPublicKey: publicKey, code: code,
            senderHello: header + publicKey, receiverHello: hello)
        let confirmation = try await read(
            fd, SecureChannel.confirmationSize, what: "confirmation", from: peer,
            until: deadline, timeout: timeout)
        guard channel.isPeerConfirmation(confirmation) else {
            throw TransferError(.pairingFailed, "a sender gave a wrong pairing code")
        }
        try TransferSocket.write(fd, channel.ownConfirmation, what: "confirmation")
        return channel
    }

    /// Reads `count` bytes of the handshake, or says how far the peer got.
    private static func read(
        _ fd: Int32, _ count: Int, what: String, from peer: String,
        until deadline: ContinuousClock.Instant, timeout: Duration
    ) async throws -> [UInt8] {
        switch try await TransferSocket.receive(fd, count: count, until: deadline) {
        case .complete(let bytes):
            return bytes
        case .closed(let bytes):
            throw TransferError(.connectionLost, "\(peer) closed the connection after \(bytes.count) of the \(what)'s \(count) bytes")
        case .reset(let bytes):
            throw TransferError(.connectionLost, "\(peer) reset the connection after \(bytes.count) of the \(what)'s \(count) bytes")
        case .timedOut(let bytes):
            throw TransferError(
                .timedOut,
                "\(peer) did not complete the handshake within \(TransferSocket.seconds(timeout)) "
                    + "(\(bytes.count) of the \(what)'s \(count) bytes arrived)")
        }
    }
}
