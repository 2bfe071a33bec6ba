package import AppMigration
package import Crypto
import Foundation
import Synchronization
import TestSupport

/// The transfer protocol spoken by hand, on blocking sockets, for peers that pair properly and
/// then misbehave (stall, vanish, never answer), and for the man in the middle.
package enum PairedPeer {
    /// The first 16 bytes of a hello of `version`, followed by a fresh X25519 key.
    package static func hello(
        version: UInt32 = TransferFrame.protocolVersion, flags: UInt32 = 0
    ) -> (bytes: [UInt8], key: Curve25519.KeyAgreement.PrivateKey) {
        let key = Curve25519.KeyAgreement.PrivateKey()
        return (helloBytes(version: version, flags: flags) + Array(key.publicKey.rawRepresentation), key)
    }

    /// Pairs as a sender: hellos, then the confirmations. Nil if the receiver refused or failed.
    package static func actAsSender(_ fd: Int32, code: PairingCode) -> SecureChannel? {
        let (ours, key) = hello()
        guard sendAll(fd, ours) else { return nil }
        let theirs = receiveExactly(fd, 48)
        guard theirs.count == 48,
            let channel = try? SecureChannel(
                role: .sender, privateKey: key, peerPublicKey: Array(theirs[16...]), code: code,
                senderHello: ours, receiverHello: theirs),
            sendAll(fd, channel.ownConfirmation),
            channel.isPeerConfirmation(receiveExactly(fd, 32))
        else { return nil }
        return channel
    }

    /// Pairs as a receiver. Nil if the sender's hello or confirmation is wrong.
    package static func actAsReceiver(_ fd: Int32, code: PairingCode) -> SecureChannel? {
        let theirs = receiveExactly(fd, 48)
        let (ours, key) = hello()
        guard theirs.count == 48, sendAll(fd, ours),
            let channel = try? SecureChannel(
                role: .receiver, privateKey: key, peerPublicKey: Array(theirs[16...]), code: code,
                senderHello: theirs, receiverHello: ours),
            channel.isPeerConfirmation(receiveExactly(fd, 32)),
            sendAll(fd, channel.ownConfirmation)
        else { return nil }
        return channel
    }

    /// One record on the wire.
    package static func record(_ channel: SecureChannel, _ type: SecureChannel.RecordType, _ payload: [UInt8] = []) -> [UInt8] {
        try! channel.sealer.seal(type, payload)
    }

    /// Reads one record; nil if the connection ends first or it fails authentication.
    package static func readRecord(_ fd: Int32, _ channel: SecureChannel) -> (SecureChannel.RecordType, [UInt8])? {
        let header = receiveExactly(fd, 4)
        guard header.count == 4, let length = RecordOpener.sealedLength(header) else { return nil }
        let sealed = receiveExactly(fd, length)
        guard sealed.count == length else { return nil }
        return try? channel.opener.open(header: header, sealed: sealed)
    }
}

/// The bytes a sender sends before its first record: the 48-byte hello and the 32-byte confirmation.
package let senderHandshakeBytes = 80
