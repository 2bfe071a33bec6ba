import AppMigration
import Testing

@Suite struct TransferErrorTests {
    /// A `.remoteFailure` quotes what the receiver sent: whoever runs the other end chose those
    /// bytes, so the description must not carry them raw to a terminal.
    @Test func descriptionEscapesAPeersControlCharacters() {
        let error = TransferError(.remoteFailure, "the receiver failed to import: \u{1B}[2J\u{1B}]0;owned\u{7}\nforged \u{202E}")
        #expect(error.description == #"the receiver failed to import: \x1b[2J\x1b]0;owned\x07\nforged \u202e"#)
        #expect(error.errorDescription == error.description)
        #expect(error.message.contains("\u{1B}"), "the stored message stays as received, for programs")
    }

    /// Names in the message are often already escaped (an archive error's description): their
    /// backslashes are not doubled.
    @Test func descriptionKeepsBackslashes() {
        let error = TransferError(.connectionLost, #"lost: a.tar.xz, member 'x\\y\x1b': bad block"#)
        #expect(error.description == error.message)
    }
}
