package import Crypto
import Foundation
import Synchronization

/// The keys of one paired transfer, and the records that carry everything after the handshake.
///
/// The construction, all from swift-crypto (CryptoKit's API over BoringSSL):
/// - each side sends an ephemeral X25519 public key in its hello;
/// - both derive 128 bytes with HKDF-SHA256 from the X25519 shared secret, salted with the
///   SHA-256 of both hellos (the transcript) and with the pairing code in its info: a key for
///   each direction's records and a key for each side's confirmation;
/// - the sender proves it holds the code with HMAC-SHA256 over the transcript, which the receiver
///   checks (in constant time) before anything else; then the receiver proves it the same way, so
///   the sender knows it talks to the receiver that showed the code. A man in the middle holds a
///   different shared secret with each side and, without the code, can produce neither proof;
/// - records are sealed with ChaCha20-Poly1305 under the direction's key, with the record's
///   sequence number as nonce and its length as authenticated data: a flipped byte fails the tag,
///   and a dropped, reordered or replayed record is opened with the wrong sequence number and
///   fails it too. An end record closes each stream, so a cut is never taken for an end.
/// A replayed recording of a whole session fails at the confirmation: the receiver's new
/// ephemeral key gives the session other keys.
package struct SecureChannel: Sendable {
    package enum Role: Sendable {
        case sender, receiver
    }

    /// What a record carries, in its first plaintext byte.
    package enum RecordType: UInt8, Sendable {
        /// Archive bytes.
        case data = 0
        /// The end of the archive: nothing follows in this direction.
        case end = 1
        /// The receiver's status: the import succeeded; the payload is its message.
        case statusOK = 2
        /// The receiver's status: the import failed; the payload is why.
        case statusFailed = 3
    }

    /// The most plaintext one record carries, besides its type byte.
    package static let maxPayload = 64 << 10
    /// The tag ChaCha20-Poly1305 appends.
    static let tagSize = 16
    /// The largest sealed record (type byte, payload, tag) a peer may announce; the length prefix
    /// is checked against it before anything is read or allocated.
    static let maxSealedRecord = 1 + maxPayload + tagSize
    /// Bytes of a confirmation (an HMAC-SHA256).
    static let confirmationSize = 32

    package let sealer: RecordSealer
    package let opener: RecordOpener
    /// This side's proof that it holds the code.
    package let ownConfirmation: [UInt8]
    private let peerConfirmationKey: SymmetricKey
    private let transcript: [UInt8]
    private let role: Role

    /// Derives the session from this side's key, the peer's public key and the code.
    ///
    /// `senderHello` and `receiverHello` are the two hellos as sent, public keys included.
    /// - Throws: ``TransferError`` `.notAPeer` if the peer's public key is not a valid X25519 key.
    package init(
        role: Role, privateKey: Curve25519.KeyAgreement.PrivateKey, peerPublicKey: [UInt8], code: PairingCode,
        senderHello: [UInt8], receiverHello: [UInt8]
    ) throws {
        let peerKey: Curve25519.KeyAgreement.PublicKey
        do {
            peerKey = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: peerPublicKey)
        } catch {
            throw TransferError(.notAPeer, "the peer's hello holds no valid X25519 public key")
        }
        let shared = try privateKey.sharedSecretFromKeyAgreement(with: peerKey)
        // A public key of small order (all zeros, and a few others) makes the shared secret all
        // zeros whatever our key is: the keys would then rest on the code alone, not on the
        // exchange. RFC 7748 (section 6.1) says to refuse it.
        guard shared.withUnsafeBytes({ $0.contains { $0 != 0 } }) else {
            throw TransferError(.notAPeer, "the peer's hello holds an X25519 public key of small order, which no real peer sends")
        }
        let transcript = senderHello + receiverHello
        let salt = Array(SHA256.hash(data: transcript))
        let info = Array("AMK transfer v2 keys ".utf8) + code.characters
        let material = shared.hkdfDerivedSymmetricKey(using: SHA256.self, salt: salt, sharedInfo: info, outputByteCount: 128)
        let bytes = material.withUnsafeBytes { Array($0) }
        let senderData = SymmetricKey(data: bytes[0..<32])
        let receiverData = SymmetricKey(data: bytes[32..<64])
        let senderConfirm = SymmetricKey(data: bytes[64..<96])
        let receiverConfirm = SymmetricKey(data: bytes[96..<128])
        self.role = role
        self.transcript = transcript
        switch role {
        case .sender:
            sealer = RecordSealer(key: senderData)
            opener = RecordOpener(key: receiverData)
            ownConfirmation = Self.confirmation(key: senderConfirm, label: "sender", transcript: transcript)
            peerConfirmationKey = receiverConfirm
        case .receiver:
            sealer = RecordSealer(key: receiverData)
            opener = RecordOpener(key: senderData)
            ownConfirmation = Self.confirmation(key: receiverConfirm, label: "receiver", transcript: transcript)
            peerConfirmationKey = senderConfirm
        }
    }

    /// Whether `bytes` is the peer's proof that it holds the code (compared in constant time).
    package func isPeerConfirmation(_ bytes: [UInt8]) -> Bool {
        let label = role == .sender ? "receiver" : "sender"
        return HMAC<SHA256>.isValidAuthenticationCode(
            bytes, authenticating: Array(label.utf8) + transcript,
            using: peerConfirmationKey)
    }

    private static func confirmation(key: SymmetricKey, label: String, transcript: [UInt8]) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: Array(label.utf8) + transcript, using: key))
    }
}

/// Seals one direction's records, numbering them from 0.
///
/// A class because the numbering is state that moves from thread to thread (the relay's, then the
/// task sending the status). Only one of them seals at a time, so the Mutex is never contended:
/// it is there so that Swift can check that hand-off.
package final class RecordSealer: Sendable {
    private let key: SymmetricKey
    private let sequence = Mutex<UInt64>(0)

    init(key: SymmetricKey) {
        self.key = key
    }

    /// The record on the wire: a u32 LE length, then the sealed type byte and payload with the tag.
    package func seal(_ type: SecureChannel.RecordType, _ payload: UnsafeRawBufferPointer) throws -> [UInt8] {
        precondition(payload.count <= SecureChannel.maxPayload)
        let sealedLength = 1 + payload.count + SecureChannel.tagSize
        let header = TransferFrame.littleEndian(UInt32(sealedLength))
        var plaintext = [UInt8]()
        plaintext.reserveCapacity(1 + payload.count)
        plaintext.append(type.rawValue)
        plaintext.append(contentsOf: payload)
        let box = try sequence.withLock { sequence in
            let box = try ChaChaPoly.seal(plaintext, using: key, nonce: nonce(sequence), authenticating: header)
            sequence += 1
            return box
        }
        var record = header
        record.reserveCapacity(4 + sealedLength)
        record.append(contentsOf: box.ciphertext)
        record.append(contentsOf: box.tag)
        return record
    }

    package func seal(_ type: SecureChannel.RecordType, _ payload: [UInt8] = []) throws -> [UInt8] {
        try payload.withUnsafeBytes { try seal(type, $0) }
    }
}

/// Opens one direction's records, expecting them numbered from 0 with none missing.
///
/// Sendable for the same reason as ``RecordSealer``: one thread at a time opens, under a Mutex
/// that is never contended.
package final class RecordOpener: Sendable {
    private let key: SymmetricKey
    private let sequence = Mutex<UInt64>(0)

    init(key: SymmetricKey) {
        self.key = key
    }

    /// The number of the next record expected (how many were opened).
    var opened: UInt64 { sequence.withLock { $0 } }

    /// The sealed length a record's 4-byte prefix announces, if it is within the limit.
    package static func sealedLength(_ prefix: some Collection<UInt8>) -> Int? {
        let bytes = Array(prefix)
        let length = Int(UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 24)
        guard length >= 1 + SecureChannel.tagSize, length <= SecureChannel.maxSealedRecord else { return nil }
        return length
    }

    /// Opens the record whose length prefix is `header` and sealed bytes `sealed`.
    /// - Throws: ``TransferError`` `.tampered` naming the record, when the tag does not check out
    ///   (a flipped byte, or a record out of its place) or the type is unknown.
    package func open(header: some Collection<UInt8>, sealed: some Collection<UInt8>) throws(TransferError) -> (
        SecureChannel.RecordType, [UInt8]
    ) {
        let bytes = Array(sealed)
        let header = Array(header)
        return try sequence.withLock { (sequence: inout UInt64) throws(TransferError) -> (SecureChannel.RecordType, [UInt8]) in
            let tampered = TransferError(
                .tampered,
                "record \(sequence) failed authentication: it was altered, "
                    + "or a record before it was dropped, reordered or replayed")
            guard bytes.count >= 1 + SecureChannel.tagSize else { throw tampered }
            let plaintext: Data
            do {
                let box = try ChaChaPoly.SealedBox(
                    nonce: nonce(sequence), ciphertext: bytes[..<(bytes.count - SecureChannel.tagSize)],
                    tag: bytes[(bytes.count - SecureChannel.tagSize)...])
                plaintext = try ChaChaPoly.open(box, using: key, authenticating: header)
            } catch {
                throw tampered
            }
            guard let type = SecureChannel.RecordType(rawValue: plaintext[plaintext.startIndex]) else {
                throw TransferError(.tampered, "record \(sequence) is of an unknown type \(plaintext[plaintext.startIndex])")
            }
            sequence += 1
            return (type, Array(plaintext.dropFirst()))
        }
    }
}

/// The nonce of record `sequence`: 4 zero bytes, then the number, big-endian. Each direction has
/// its own key, so the two directions' record 0 never share a key and a nonce.
private func nonce(_ sequence: UInt64) -> ChaChaPoly.Nonce {
    var bytes = [UInt8](repeating: 0, count: 12)
    for index in 0..<8 { bytes[4 + index] = UInt8(truncatingIfNeeded: sequence >> (56 - 8 * index)) }
    return try! ChaChaPoly.Nonce(data: bytes)
}
