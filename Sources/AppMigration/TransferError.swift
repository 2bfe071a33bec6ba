public import Foundation
import IndexedArchive

/// Why a streamed migration between two parties (a pipe in one process, or a TCP connection
/// between two) failed on the wire, as opposed to in the export or the import themselves.
///
/// Each side says what the peer did, in terms a person can act on ("the sender was idle for 60 s
/// (12 bytes in 60 s; ...)", "no status from the receiver at ... within 300 s", "the sender
/// closed the connection after 1234 bytes of the archive"), never a bare `errno`: a sender whose
/// receiver vanished gets `.connectionLost`; a receiver whose sender closed, reset or went idle
/// mid-stream gets `.connectionLost` or `.timedOut`, with the import's own error (the archive
/// broke off) as ``underlying``; and both sides of a version mismatch get `.versionMismatch`
/// naming both versions.
public struct TransferError: Error, Sendable, CustomStringConvertible, LocalizedError {
    /// The kind of failure, for programs; ``message`` is for people.
    public enum Code: Sendable, Hashable {
        /// The peer does not speak the amk transfer protocol at all.
        case notAPeer
        /// The peer speaks another version of the protocol.
        case versionMismatch(local: UInt32, remote: UInt32)
        /// The connection ended or broke before the transfer finished.
        case connectionLost
        /// The receiver reported that the import failed; ``message`` holds its reason.
        case remoteFailure
        /// The peer did not do its part in time: no connection or hello within the handshake
        /// timeout, too little progress in an idle window, or no status within the status timeout.
        case timedOut
        /// A socket or pipe call failed.
        case system(errno: Int32)
        /// An address is not `HOST:PORT` (a name, an IPv4 address, or an IPv6 one in brackets), or
        /// the name does not resolve.
        case invalidAddress
        /// A pairing code as typed is not one (wrong length, a character outside the alphabet).
        case invalidPairingCode
        /// The peer does not hold the pairing code: a receiver saw too many senders with a wrong
        /// code, or a sender's receiver could not prove it holds the code.
        case pairingFailed
        /// A record failed authentication: altered, dropped, reordered or replayed on the way.
        case tampered
        /// The sender's archive, or one of its records, is larger than the receiver accepts.
        case tooLarge
    }

    /// What went wrong, for programs to switch on.
    public var code: Code
    /// What went wrong, for people.
    public var message: String
    /// The error behind this one, if any.
    public var underlying: (any Error)?

    /// An error of kind `code`, described by `message`.
    public init(_ code: Code, _ message: String, underlying: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    /// ``message``, safe to print on a terminal.
    ///
    /// A `.remoteFailure` quotes the receiver's own words, which whoever runs the other end
    /// chose: their control characters are escaped (`TerminalSafe.message(_:)`, which leaves
    /// backslashes alone, so names already escaped in a quoted error are not escaped twice).
    /// ``message`` itself stays as received, for programs.
    public var description: String { TerminalSafe.message(message) }
    /// The same as ``description``, for Foundation's error reporting.
    public var errorDescription: String? { description }
}
