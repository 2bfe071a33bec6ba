import Synchronization
import Tar
import XZ

/// Everything that happens to the decompressed tar stream, in order: parsing, listing, checking
/// each member against the index, checksums, and extraction. One job at a time feeds it from a
/// thread of our own, under a Mutex that makes the hand-off between jobs safe.
struct TarConsumer {
    var parser = TarParser()
    /// The index entries, when the archive has an index: each parsed member must match.
    var expected: [ArchiveEntry]?
    var nextExpected = 0
    /// Members seen, when listing.
    var collected: [ArchiveEntry]? = nil
    var extractor: Extractor?
    /// Members to extract; nil means all.
    var filter: Set<String>?
    var metadata: [String: String] = [:]
    var members = 0
    /// A member whose content to keep (sequential reads of one member), and what was kept.
    var capture: String?
    var captureLimit = 1 << 30
    var captured: [UInt8]?
    private var capturing = false
    /// The captured member is complete.
    private(set) var captureDone = false
    private var current: TarMember?
    private var currentSelected = false
    private var checksum: UInt64 = 0
    private(set) var endOffset: UInt64?

    /// Bytes of the decompressed stream consumed so far.
    private(set) var streamPosition: UInt64 = 0
    /// When set, the bytes after the end marker (our index blocks, in a streamed archive) are kept,
    /// up to this many.
    var trailingLimit: Int?
    private(set) var trailing: [UInt8] = []
    /// Compute each regular member's CRC64 into the collected entries (for streams, whose index
    /// arrives only at the end).
    var checksumCollected = false
    /// Called with the decompressed bytes consumed so far, after each piece (a progress bar).
    var onProgress: (@Sendable (UInt64) -> Void)?

    init(expected: [ArchiveEntry]? = nil, collect: Bool = false, extractor: Extractor? = nil, filter: Set<String>? = nil) {
        self.expected = expected
        self.collected = collect ? [] : nil
        self.extractor = extractor
        self.filter = filter
    }

    mutating func consume(_ bytes: UnsafeRawBufferPointer) throws {
        var parser = self.parser
        defer { self.parser = parser }
        try parser.consume(bytes) { event in try handle(event) }
        let start = streamPosition
        streamPosition += UInt64(bytes.count)
        onProgress?(streamPosition)
        if let limit = trailingLimit, let end = endOffset {
            let trailingStart = end + UInt64(TarEncoder.endOfArchive.count)
            if streamPosition > trailingStart {
                let from = Int(max(start, trailingStart) - start)
                guard trailing.count + (bytes.count - from) <= limit else {
                    throw ArchiveError(.limitExceeded, "more than \(limit) bytes follow the tar stream", offset: trailingStart)
                }
                trailing.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[from...]))
            }
        }
    }

    mutating func finish(requireEndMarker: Bool = true) throws {
        try parser.finish(requireEndMarker: requireEndMarker)
        if let expected, nextExpected != expected.count {
            throw ArchiveError(.corrupt, "the index lists \(expected.count) members but the tar stream has \(nextExpected)")
        }
        try extractor?.finish()
    }

    static func selected(_ path: String, by filter: Set<String>?) -> Bool {
        guard let filter else { return true }
        var name = path.hasSuffix("/") ? String(path.dropLast()) : path
        while true {
            if filter.contains(name) || filter.contains(name + "/") { return true }
            guard let slash = name.lastIndex(of: "/") else { return false }
            name = String(name[..<slash])
        }
    }

    private mutating func handle(_ event: TarParser.Event) throws {
        switch event {
        case .globalHeader(let records, let offset):
            // Every global header may add keys, and a stream may hold any number of them: a
            // small archive could make us keep gigabytes (DESIGN §6). What is kept is bounded
            // far above what a writer puts there (a handful of short values).
            let maxKeys = 256
            let maxBytes = 64 * 1024
            var kept = metadata.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
            for record in records where record.key.hasPrefix("AMK.") {
                let key = String(record.key.dropFirst(4))
                kept += key.utf8.count + record.value.utf8.count - (metadata[key].map { key.utf8.count + $0.utf8.count } ?? 0)
                guard kept <= maxBytes, metadata[key] != nil || metadata.count < maxKeys else {
                    throw ArchiveError(
                        .limitExceeded,
                        "pax global headers carry more archive metadata than the limit "
                            + "(\(maxKeys) keys, \(maxBytes) bytes in total), at tar offset \(offset)")
                }
                metadata[key] = record.value
            }
        case .member(let member):
            current = member
            checksum = 0
            members += 1
            if let expected {
                guard nextExpected < expected.count else {
                    throw ArchiveError(.corrupt, "member is not in the index", member: member.header.path, offset: member.headerOffset)
                }
                let entry = expected[nextExpected]
                let header = member.header
                // Names byte for byte: String equality is canonical equivalence.
                guard entry.path.utf8.elementsEqual(header.path.utf8), entry.kind == header.kind, entry.size == header.size,
                    entry.headerOffset == member.headerOffset, entry.dataOffset == member.dataOffset,
                    entry.mode == header.mode, TarSerializer.tarTime(header.mtime, matches: entry.mtime),
                    entry.linkTarget == header.linkTarget,
                    (entry.linkTarget ?? "").utf8.elementsEqual((header.linkTarget ?? "").utf8)
                else {
                    throw ArchiveError(
                        .corrupt, "tar header disagrees with the index entry for '\(entry.path)'",
                        member: header.path, offset: member.headerOffset)
                }
            }
            collected?.append(
                ArchiveEntry(
                    path: member.header.path, kind: member.header.kind, size: member.header.size, mode: member.header.mode,
                    uid: member.header.uid, gid: member.header.gid, mtime: member.header.mtime,
                    linkTarget: member.header.linkTarget, headerOffset: member.headerOffset, dataOffset: member.dataOffset,
                    checksum: nil, hasPaxHeader: member.hasPaxHeader))
            if let capture, captured == nil, member.header.path == capture || member.header.path == capture + "/" {
                capturing = true
                captured = []
            }
            currentSelected = extractor != nil && Self.selected(member.header.path, by: filter)
            if currentSelected {
                var header = member.header
                // The tar header has whole seconds; the index (checked above) has the nanoseconds.
                if let expected { header.mtime = expected[nextExpected].mtime }
                try extractor!.begin(header)
            }
        case .data(let bytes, _):
            if expected != nil || checksumCollected { checksum = CRC.crc64(bytes, previous: checksum) }
            if capturing {
                guard captured!.count + bytes.count <= captureLimit else {
                    throw ArchiveError(.limitExceeded, "member is over the limit of \(captureLimit) bytes", member: capture)
                }
                captured!.append(contentsOf: bytes)
            }
            if currentSelected { try extractor!.write(bytes) }
        case .memberEnd:
            if let expected, let member = current {
                let entry = expected[nextExpected]
                if entry.kind == .regular, let sum = entry.checksum, sum != checksum {
                    throw ArchiveError(
                        .checksumMismatch, "content checksum mismatch (index \(hex(sum)), data \(hex(checksum)))",
                        member: member.header.path, offset: member.dataOffset)
                }
                nextExpected += 1
            }
            if checksumCollected, current?.header.kind == .regular, let last = collected?.indices.last {
                collected![last].checksum = checksum
            }
            if currentSelected { try extractor!.endMember() }
            if capturing {
                capturing = false
                captureDone = true
            }
            current = nil
            currentSelected = false
        case .end(let offset):
            endOffset = offset
        }
    }

    private func hex(_ value: UInt64) -> String { String(value, radix: 16) }

    /// The member the stream stopped inside, if any.
    var unfinishedMember: String? { current?.header.path }
}

/// A `TarConsumer` (and, for sequential reads, the decoder in front of it) shared by the jobs that
/// feed it one after another.
final class ConsumerBox: Sendable {
    struct State {
        var consumer: TarConsumer
        var decoder: StreamDecoder?
    }

    let state: Mutex<State>

    init(_ consumer: sending TarConsumer, decoder: sending StreamDecoder? = nil) {
        state = Mutex(State(consumer: consumer, decoder: decoder))
    }
}
