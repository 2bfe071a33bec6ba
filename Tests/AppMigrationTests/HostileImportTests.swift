import Foundation
import IndexedArchive
import Synchronization
import Tar
import TestSupport
import Testing
import TransferTestSupport

@testable import AppMigration

/// Issue #10 on the host's writing paths: every class of hostile archive that extraction refuses
/// is refused the same way by an import from a file, an import from a descriptor (the streamed
/// import) and a receive over loopback. Each ends with the container as it was, nothing written
/// outside, and the failure recorded where the app reads it.
@Suite struct HostileImportTests {
    enum Path: String, CaseIterable, Sendable {
        case file, descriptor, receive
    }

    /// One class of hostile archive: its tar members, in our indexed layout.
    struct Hostile: Sendable, CustomTestStringConvertible {
        let label: String
        /// The archive, given the outside folder's path.
        let archive: @Sendable (String) throws -> [UInt8]
        var testDescription: String { label }
    }

    /// `member` with `value` patched into its pax `key` record in place of a harmless value of the
    /// same length (the encoder refuses to write a NUL): the tar and a twin the parser accepts.
    static func withNul(_ key: String, _ value: String, _ member: (String) -> (TarHeader, [UInt8])) throws -> (evil: [UInt8], twin: [UInt8])
    {
        let bytes = Array(value.utf8)
        let placeholder = "é" + String(repeating: "x", count: bytes.count - 2)
        let twin = try HostileArchive.tar([member(placeholder)])
        let record = Array(" \(key)=\(placeholder)".utf8)
        guard let at = twin.firstRange(of: record) else { throw CocoaError(.fileReadCorruptFile) }
        var evil = twin
        evil.replaceSubrange((at.upperBound - bytes.count)..<at.upperBound, with: bytes)
        return (evil, twin)
    }

    static let cases: [Hostile] = [
        Hostile(label: "NUL in a pax path") { _ in
            let (evil, twin) = try withNul("path", "Documents/..\0/../escape") { HostileArchive.file($0, "pwned") }
            return try HostileArchive.indexed(tar: evil, describing: twin) { $0[0].path = "Documents/..\0/../escape" }
        },
        Hostile(label: "NUL in a symlink's pax linkpath") { outside in
            let target = outside + "/\0x"
            let (evil, twin) = try withNul("linkpath", target) { HostileArchive.symlink("Documents", to: $0) }
            return try HostileArchive.indexed(tar: evil, describing: twin) { $0[0].linkTarget = target }
        },
        Hostile(label: "'..' in a path") { _ in
            try HostileArchive.indexed([HostileArchive.directory("Documents"), HostileArchive.file("Documents/../../../escape", "pwned")])
        },
        Hostile(label: "hard link to a file outside") { outside in
            try HostileArchive.indexed([
                HostileArchive.directory("Documents"),
                (
                    TarHeader(
                        path: "Documents/hl", kind: .hardLink, mode: 0o644, mtime: HostileArchive.mtime,
                        linkTarget: outside + "/secret.txt"), []
                )
            ])
        }
    ]
    // 600 nested folders were here while extraction stopped at 512 levels; a tree that deep is
    // no longer refused (every tree amk packs extracts, with at most 16 folders held open: see
    // ExtractorTests.aTreeDeeperThan512LevelsExtracts).

    static let loopback = TransferEndpoint(host: "127.0.0.1", port: 0)

    @Test(arguments: Path.allCases, cases)
    func aHostileArchiveIsRefusedAndChangesNothing(_ path: Path, _ hostile: Hostile) async throws {
        try await Scratch.with { scratch in
            let outside = try OutsideFolder(in: scratch)
            let outsideBefore = try outside.contents()
            let bytes = try hostile.archive(outside.path)
            let destination = try scratch.container("destination")
            try write("mine", to: "keep.txt", in: destination.documentsDirectory)
            let before = try snapshot(destination.containerRootDirectory)
            let outcome = await capture {
                switch path {
                case .file:
                    let archive = try write(Data(bytes), to: "hostile.tar.xz", in: scratch.root)
                    try await quickSystem.importResources(from: archive, into: destination, using: MergingMigration())
                case .descriptor:
                    try await feed(bytes) { fd in
                        try await quickSystem.importResources(fromDescriptor: fd, into: destination, using: MergingMigration())
                    }
                case .receive:
                    let listener = try TransferListener(Self.loopback)
                    let code = PairingCode.random()
                    let refusals = Mutex<[TransferError]>([])
                    async let received = capture {
                        try await quickSystem.receive(
                            MergingMigration(), into: destination, on: listener, pairingCode: code,
                            acceptTimeout: .seconds(30), idleTimeout: .seconds(30),
                            onRefused: { refusal in refusals.withLock { $0.append(refusal) } })
                    }
                    let sent = await capture { try await RawSender.send(bytes, to: listener.endpoint, code: code) }
                    let receiving = await received
                    if case .failure(let error) = sent {
                        // Only the receiver can say why it would not pair.
                        let refused = refusals.withLock { $0 }
                        Issue.record("the hand-written sender failed: \(error); the receiver: \(receiving), after refusing \(refused)")
                    }
                    _ = try receiving.get()
                }
            }
            guard case .failure(let error) = outcome else {
                Issue.record("\(path): \(hostile.label) was imported")
                return
            }
            // A receiver whose stream was refused as damaged (a header the parser rejects) reports
            // it as the end of what the sender sent, keeping the import's error underneath.
            let importError = (error as? AppMigrationError) ?? ((error as? TransferError)?.underlying as? AppMigrationError)
            #expect(importError?.code == .unreadableArchive, "\(error)")
            #expect(try outside.contents() == outsideBefore, "the outside folder was touched")
            #expect(try snapshot(destination.containerRootDirectory) == before, "the container changed")
            #expect(try stagingFolders(in: destination).isEmpty)
            #expect(!FileManager.default.fileExists(atPath: scratch.root.appending(path: "escape").path(percentEncoded: false)))
            var info = stat()
            lstat(outside.path + "/secret.txt", &info)
            #expect(info.st_nlink == 1, "no hard link was made to a file outside")
            guard case .failure? = importStatus(of: destination) else {
                Issue.record("no failure recorded: \(String(describing: importStatus(of: destination)))")
                return
            }
        }
    }
}

extension HostileImportTests {
    /// A sender that holds the code sends a whole, sound archive, then an empty data record (which
    /// releases the archive's last bytes to the engine) and closes without the end record: nothing
    /// is imported. It was: the engine saw a complete archive and the end of its stream, and the
    /// receiver exited 0. With the end record, the same archive imports.
    @Test(arguments: [RawSender.Ending.emptyRecordThenClose, .endRecord])
    func onlyTheEndRecordCompletesAReceive(_ ending: RawSender.Ending) async throws {
        try await Scratch.with { scratch in
            let bytes = try HostileArchive.indexed([HostileArchive.directory("Documents"), HostileArchive.file("Documents/new.txt", "data")]
            )
            let destination = try scratch.container("destination")
            try write("mine", to: "keep.txt", in: destination.documentsDirectory)
            let before = try snapshot(destination.containerRootDirectory)
            let listener = try TransferListener(Self.loopback)
            let code = PairingCode.random()
            async let received = capture {
                try await quickSystem.receive(
                    MergingMigration(), into: destination, on: listener, pairingCode: code,
                    acceptTimeout: .seconds(30), idleTimeout: .seconds(30))
            }
            _ = await capture { try await RawSender.send(bytes, to: listener.endpoint, code: code, ending: ending) }
            let outcome = await received
            let landed = FileManager.default.fileExists(
                atPath: destination.documentsDirectory.appending(path: "new.txt").path(percentEncoded: false))
            switch ending {
            case .endRecord:
                _ = try outcome.get()
                #expect(landed)
            case .emptyRecordThenClose:
                guard case .failure(let error) = outcome else {
                    Issue.record("a stream without its end record was imported")
                    return
                }
                #expect((error as? TransferError)?.code == .connectionLost, "\(error)")
                #expect("\(error)".contains("without its end record"), "\(error)")
                #expect(!landed)
                #expect(try snapshot(destination.containerRootDirectory) == before)
            }
        }
    }
}

/// A paired sender speaking the transfer protocol by hand, so that it can send any bytes as the
/// archive: the hostile archive arrives authentic, and only the import stands in its way.
enum RawSender {
    /// How the hand-written sender ends its stream.
    enum Ending: Sendable {
        /// With the end record, as a sender does.
        case endRecord
        /// With an empty data record, which releases the archive's last record to the engine, and
        /// then by closing: no end record.
        case emptyRecordThenClose
    }

    /// Connects to `endpoint`, pairs with `code`, sends `archive` in records and ends as `ending`
    /// says, and reads the receiver's status.
    static func send(_ archive: [UInt8], to endpoint: TransferEndpoint, code: PairingCode, ending: Ending = .endRecord) async throws {
        try await offPool {
            let fd = try rawConnect(endpoint)
            defer { close(fd) }
            guard let channel = PairedPeer.actAsSender(fd, code: code) else {
                throw TransferError(.pairingFailed, "the receiver at \(endpoint) did not complete the pairing")
            }
            var offset = 0
            while offset < archive.count {
                let piece = Array(archive[offset..<min(archive.count, offset + SecureChannel.maxPayload)])
                guard sendAll(fd, PairedPeer.record(channel, .data, piece)) else { return }
                offset += piece.count
            }
            switch ending {
            case .endRecord: guard sendAll(fd, PairedPeer.record(channel, .end)) else { return }
            case .emptyRecordThenClose: guard sendAll(fd, PairedPeer.record(channel, .data, [])) else { return }
            }
            shutdown(fd, Int32(SHUT_WR))
            _ = PairedPeer.readRecord(fd, channel)
        }
    }
}
