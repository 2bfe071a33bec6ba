import AppMigration
import Crypto
import Testing

/// The session keys come from the key exchange and the code together: a peer's key that takes the
/// exchange out of them is refused.
@Suite struct SecureChannelTests {
    static let hello = Array(repeating: UInt8(7), count: 48)

    static func channel(peerKey: [UInt8]) throws -> SecureChannel {
        try SecureChannel(
            role: .receiver, privateKey: Curve25519.KeyAgreement.PrivateKey(), peerPublicKey: peerKey, code: PairingCode.random(),
            senderHello: hello, receiverHello: hello)
    }

    /// Points of small order (RFC 7748, section 6.1; the list libsodium refuses): with any of
    /// them the shared secret is all zeros whatever our key is.
    @Test(arguments: [
        [UInt8](repeating: 0, count: 32),
        [1] + [UInt8](repeating: 0, count: 31),
        [
            0xe0, 0xeb, 0x7a, 0x7c, 0x3b, 0x41, 0xb8, 0xae, 0x16, 0x56, 0xe3, 0xfa, 0xf1, 0x9f, 0xc4, 0x6a,
            0xda, 0x09, 0x8d, 0xeb, 0x9c, 0x32, 0xb1, 0xfd, 0x86, 0x62, 0x05, 0x16, 0x5f, 0x49, 0xb8, 0x00
        ],
        // p - 1, which the key's decoding does not reduce away.
        [0xec] + [UInt8](repeating: 0xff, count: 30) + [0x7f]
    ])
    func aPeerKeyOfSmallOrderIsRefused(key: [UInt8]) throws {
        let error = #expect(throws: TransferError.self) { try Self.channel(peerKey: key) }
        #expect(error?.code == .notAPeer)
        #expect(error?.message.contains("small order") == true, "\(String(describing: error))")
    }

    @Test func aRealPeersKeyMakesAChannel() throws {
        let peer = Curve25519.KeyAgreement.PrivateKey()
        let channel = try Self.channel(peerKey: Array(peer.publicKey.rawRepresentation))
        #expect(channel.ownConfirmation.count == 32)
    }
}
