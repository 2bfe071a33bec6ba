import Synchronization
import Tar

/// The members of a selective extraction, written as the decoded tar bytes pass them.
///
/// A block is decoded once for all the selected members it holds (decoding it from its start for
/// each one made 100 members of one 64 MiB block cost 100 decodes); each piece is handed to the
/// cursor of every member it covers, in archive order. Each member's header is checked against
/// the index before the extractor creates anything, and its checksum before `endMember()` puts it
/// in place.
///
/// All of it, the extractor's system calls included, runs on the extraction's I/O thread: the
/// reader hands each piece over in one job, so Swift's cooperative pool never waits on a write.
final class SelectiveExtraction: Sendable {
    /// Members whose blocks are decoded together: consecutive in the archive, each starting in a
    /// block the one before it reached.
    struct Group: Sendable {
        var blocks: ClosedRange<Int>
        /// Tar offsets decoded: from the first member's header to the last member's end.
        var from: UInt64
        var to: UInt64
        var members: [(entry: ArchiveEntry, end: UInt64)]
    }

    private struct State {
        var extractor: Extractor?
        /// The group being decoded, and the next of its members to finish.
        var members: [(entry: ArchiveEntry, end: UInt64)] = []
        var next = 0
        var cursor: MemberCursor?
    }

    private let state = Mutex(State())
    let path: String
    let standIns: HardLinkStandIns

    init(path: String, standIns: HardLinkStandIns = HardLinkStandIns()) {
        self.path = path
        self.standIns = standIns
    }

    /// Creates the extractor (on the I/O thread: it creates and opens the destination).
    func start(destination: String, options: ExtractOptions, archiveSize: UInt64) throws(ArchiveError) {
        try state.withLock { (state) throws(ArchiveError) in
            state.extractor = try Extractor(destination: destination, options: options, archiveSize: archiveSize)
        }
    }

    /// Starts on a group's members.
    func begin(_ group: Group) {
        state.withLock { state in
            state.members = group.members
            state.next = 0
            state.cursor = nil
        }
    }

    /// Hands `piece` to each member it covers: the header to `begin` once checked, the content to
    /// `write` as a view of the decoded buffer, and, after a member's last byte and its checksum,
    /// `endMember`.
    func consume(_ piece: DecodedPiece) throws(ArchiveError) {
        try state.withLock { (state) throws(ArchiveError) in
            guard let extractor = state.extractor else { return }
            let pieceEnd = piece.offset + UInt64(piece.count)
            while state.next < state.members.count {
                let (entry, end) = state.members[state.next]
                var cursor = state.cursor ?? MemberCursor(entry, end: end, path: path)
                guard entry.headerOffset < pieceEnd else { return }
                let step = try cursor.take(piece)
                state.cursor = cursor
                if var header = step.header {
                    standIns.apply(to: &header, at: entry.headerOffset)
                    try extractor.begin(header)
                }
                if let content = step.content { try content.withBytes { (raw) throws(ArchiveError) in try extractor.write(raw) } }
                guard end <= pieceEnd else { return }
                try cursor.finish()
                try extractor.endMember()
                state.cursor = nil
                state.next += 1
            }
        }
    }

    /// Called when a group's blocks are decoded: every member must have been finished.
    func endGroup() throws(ArchiveError) {
        try state.withLock { (state) throws(ArchiveError) in
            guard state.next < state.members.count else { return }
            let entry = state.members[state.next].entry
            throw ArchiveError(
                .corrupt, "the member's bytes were not all decoded", path: path, member: entry.path,
                offset: entry.headerOffset)
        }
    }

    /// Finishes the extraction (directory metadata), returning what was written.
    func finish(members: Int) throws(ArchiveError) -> ArchiveReader.RunResult {
        try state.withLock { (state) throws(ArchiveError) in
            guard let extractor = state.extractor else {
                return ArchiveReader.RunResult(members: members, extracted: 0, bytes: 0, warnings: [])
            }
            try extractor.finish()
            return ArchiveReader.RunResult(
                members: members, extracted: extractor.entries, bytes: extractor.bytes,
                warnings: extractor.warnings, failures: extractor.failures, failedMembers: extractor.failedMembers,
                warningCount: extractor.warningCount)
        }
    }

    /// Removes the member being written, after a failure.
    func abandon() {
        state.withLock { $0.extractor?.abandonCurrent() }
    }
}

extension SelectiveExtraction {
    /// Extracts `entries` of an indexed archive by random access, decoding each block they span
    /// once: members are grouped by the blocks they share, each group's blocks are decoded once
    /// from the first member's header to the last member's end, and ``SelectiveExtraction``
    /// hands each member its bytes as they pass. Each member's tar header must agree with its
    /// index entry before anything is created, and its checksum must match before it is finished
    /// and put in place; on any failure the member being written is removed. The entries come in
    /// index order, which is archive order (the index refuses header offsets that go backwards),
    /// so of several members with one path the last one wins, as in a full extraction. Every
    /// system call runs on a thread of our own, and the decoded pieces are handed to it as they
    /// are, without a copy.
    static func run(
        _ entries: [ArchiveEntry], standIns: HardLinkStandIns = HardLinkStandIns(), blocks: BlockScheduler, path: String,
        span: (ArchiveEntry) throws(ArchiveError) -> (blocks: ClosedRange<Int>, end: UInt64),
        to directory: String, options: ExtractOptions
    ) async throws -> ArchiveReader.RunResult {
        let groups = try Self.groups(entries, span: span)
        let extraction = SelectiveExtraction(path: path, standIns: standIns)
        let io = WorkerThreadPool(threads: 1, name: "amk-extract")
        defer { io.shutdown() }
        let archiveSize = blocks.file.size
        do {
            try await io.run { _ in try extraction.start(destination: directory, options: options, archiveSize: archiveSize) }
            for group in groups {
                try Task.checkCancellation()
                extraction.begin(group)
                let watchdog = options.watchdog
                try await blocks.decode(
                    group.blocks, from: group.from, to: group.to, parallelism: options.parallelism,
                    watchdog: watchdog
                ) { piece in
                    try await io.run { _ in
                        let job = watchdog?.begin(.write, job: "extracting tar bytes at \(piece.offset)")
                        defer { if let job { watchdog?.end(job) } }
                        try extraction.consume(piece)
                    }
                }
                try extraction.endGroup()
            }
            return try await io.run { _ in try extraction.finish(members: entries.count) }
        } catch {
            await io.runRegardless { extraction.abandon() }
            throw error
        }
    }

    /// Groups `entries` (in archive order) so that each block is decoded once: a member joins the
    /// group before it when it starts in a block that group reaches and after its last member's
    /// end. A member starting before the previous one ends (an index describing overlapping
    /// members) starts a group of its own.
    static func groups(
        _ entries: [ArchiveEntry],
        span: (ArchiveEntry) throws(ArchiveError) -> (blocks: ClosedRange<Int>, end: UInt64)
    ) throws(ArchiveError) -> [Group] {
        var groups: [SelectiveExtraction.Group] = []
        for entry in entries {
            let (blocks, end) = try span(entry)
            if var group = groups.last, blocks.lowerBound <= group.blocks.upperBound, entry.headerOffset >= group.to {
                group.blocks = group.blocks.lowerBound...max(group.blocks.upperBound, blocks.upperBound)
                group.to = end
                group.members.append((entry, end))
                groups[groups.count - 1] = group
            } else {
                groups.append(Group(blocks: blocks, from: entry.headerOffset, to: end, members: [(entry, end)]))
            }
        }
        return groups
    }
}
