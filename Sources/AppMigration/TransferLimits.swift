/// How long each side of a transfer waits for its peer, and how little progress counts as none.
///
/// Every wait for the peer is bounded, because a peer can misbehave in ways a plain socket timeout
/// does not see: a receiver may read the whole archive and never answer, a sender may trickle one
/// byte a second (which resets `SO_RCVTIMEO` each time) and hold the container's lock for good.
/// The public `send` and `receive` expose the timeouts people tune; the others are internal so
/// that tests can make them short.
struct TransferLimits: Sendable {
    /// For the connection and the whole handshake (hellos and confirmations), on both sides: a
    /// peer that answers at all answers in milliseconds, so 30 s only allows for a loaded machine.
    var handshake: Duration = .seconds(30)

    /// The idle window of the stream: each window of time spent waiting for the peer (not for our
    /// own engine) must see at least ``minimumProgress`` bytes go through, or the peer is cut off.
    var idle: Duration = .seconds(60)

    /// The least a peer must move per ``idle`` window to count as alive: 64 KiB, far below any
    /// real link and the size of one block of incompressible data at the smallest chunk, and far
    /// above what a peer trickling to hold the connection open sends.
    var minimumProgress = 64 << 10

    /// How long the sender waits for the receiver's status after the whole archive has gone: the
    /// receiver verifies the archive's index and runs its importer in that time. The default
    /// importer moves the received folders into place, which takes seconds; 5 minutes leaves room
    /// for importers that copy, while still ending a sender whose receiver never answers.
    var status: Duration = .seconds(300)

    /// How long the sender waits for the receiver's status when the stream did not end normally
    /// (the export failed, the connection broke, the receiver stopped reading): only to learn why,
    /// from a receiver that has already said so or is about to.
    var statusAfterFailure: Duration = .seconds(5)

    /// How long a receiver that failed reads what the sender still sends after its status, so
    /// that closing with unread data does not reset the connection and destroy the status.
    var drain: Duration = .seconds(2)

    /// The largest archive a receiver accepts (before the free space of its volume bounds it).
    var maxArchiveBytes: UInt64 = 1 << 40

    /// Senders with a wrong pairing code a receiver tolerates before it gives up: 5 guesses at an
    /// 80-bit code.
    var maxFailedPairings = 5

    /// Handshakes a receiver runs side by side: enough that a flood of connections cannot crowd
    /// the real sender out before it has said its hello, few enough that it cannot exhaust
    /// descriptors or threads (each waiting read has one).
    var concurrentHandshakes = 64

    /// How long a handshake whose sender has sent its hello keeps its slot while another
    /// connection waits for one: a sender that holds the code completes the handshake in a few
    /// round trips, well inside 2 s on any link a transfer is practical over. One that has said
    /// nothing keeps it only until another comes: 100 to 200 connections that said nothing and
    /// came back as soon as they were closed once kept a sender out when every one kept its slot
    /// for 2 s (and eight renewed before their 30 s deadline did, before that).
    var handshakeSlotAge: Duration = .seconds(2)

    /// How long a connection that has sent nothing keeps its slot while another waits: long
    /// enough for a real sender's hello to cross the link (it is sent with the connection),
    /// short enough that a flood of silent connections drains hundreds a second.
    var silentSlotAge: Duration = .milliseconds(150)
}
