/// Where a sparse member's stored bytes go in the file: runs of data, in order, with holes (zeros
/// the archive does not store) before, between and after them.
///
/// GNU tar writes the map in four ways, and bsdtar (macOS's `tar`) in the last of them for any
/// sparse file it meets: old GNU (typeflag `S`, four runs in the header and more in extension
/// blocks), pax 0.0 (`GNU.sparse.offset`/`GNU.sparse.numbytes` records, in pairs), pax 0.1 (one
/// `GNU.sparse.map` record) and pax 1.0 (the map as decimal lines at the head of the content,
/// padded to a block). Each reader below builds the same map, and ``validated(storedBytes:at:)``
/// holds it to what the content can mean before a byte is handed on: a map comes from the
/// archive, so a lying one must not make the parser read past the member, write before what it
/// wrote, or claim more stored bytes than there are.
struct SparseMap: Sendable, Equatable {
    struct Run: Sendable, Equatable {
        var offset: UInt64
        var size: UInt64
    }

    var runs: [Run] = []
    /// The file's size: the last run may end before it (the file ends in a hole).
    var realSize: UInt64 = 0

    /// The map, if it describes `storedBytes` of content in a file of ``realSize`` bytes: runs in
    /// order, none overlapping the one before, each inside the file, their sizes adding up to the
    /// stored bytes exactly; otherwise why not, as an error at `offset`.
    func validated(storedBytes: UInt64, at offset: UInt64) throws(TarError) -> SparseMap {
        func bad(_ what: String) -> TarError {
            TarError(code: .badField, message: "sparse map: \(what)", offset: offset)
        }
        var end: UInt64 = 0
        var total: UInt64 = 0
        for (number, run) in runs.enumerated() {
            let (runEnd, overflow) = run.offset.addingReportingOverflow(run.size)
            guard !overflow, runEnd <= realSize else {
                throw bad("run \(number) (offset \(run.offset), \(run.size) bytes) ends past the file's size of \(realSize) bytes")
            }
            guard run.offset >= end else {
                throw bad("run \(number) starts at \(run.offset), before the end of the run before it (\(end)): runs must be in order")
            }
            end = runEnd
            total += run.size
        }
        guard total == storedBytes else {
            throw bad("its runs hold \(total) bytes, the member stores \(storedBytes)")
        }
        return self
    }

    // MARK: - Old GNU

    /// The runs of an old GNU header (`S`) or extension block: `count` entries of a 12-byte
    /// offset and a 12-byte size from `start`; an entry whose offset field is empty ends them.
    /// Returns whether the block says an extension block follows (its byte at `extendedFlag`).
    mutating func appendOldGNU(
        _ block: UnsafeRawBufferPointer, start: Int, count: Int, extendedFlag: Int, limit: Int, at offset: UInt64
    ) throws(TarError) -> Bool {
        for entry in 0..<count {
            let field = start + entry * 24
            guard block[field] != 0 else { break }
            guard let runOffset = UstarBlock.parseUnsigned(block, field..<(field + 12)),
                let size = UstarBlock.parseUnsigned(block, (field + 12)..<(field + 24))
            else {
                throw TarError(
                    code: .badField,
                    message: "sparse map: entry \(runs.count) is not a number (\(UstarBlock.quoted(block, field..<(field + 24))))",
                    offset: offset)
            }
            try append(Run(offset: runOffset, size: size), limit: limit, at: offset)
        }
        return block[extendedFlag] != 0
    }

    mutating func append(_ run: Run, limit: Int, at offset: UInt64) throws(TarError) {
        guard runs.count < limit else {
            throw TarError(code: .tooLarge, message: "sparse map of more than \(limit) runs exceeds the limit", offset: offset)
        }
        runs.append(run)
    }

    // MARK: - pax 0.1

    /// Adds the runs of a `GNU.sparse.map` value: "offset,size,offset,size...".
    mutating func appendList(_ value: String, limit: Int, at offset: UInt64) throws(TarError) {
        guard !value.isEmpty else { return }
        let numbers = value.split(separator: ",", omittingEmptySubsequences: false)
        guard numbers.count % 2 == 0 else {
            throw TarError(
                code: .badPaxRecord, message: "pax keyword \"GNU.sparse.map\": an odd count of numbers (\(numbers.count))", offset: offset)
        }
        var index = 0
        while index < numbers.count {
            guard let runOffset = PaxRecords.parseDecimal(String(numbers[index])),
                let size = PaxRecords.parseDecimal(String(numbers[index + 1]))
            else {
                throw TarError(
                    code: .badPaxRecord,
                    message: "pax keyword \"GNU.sparse.map\": entry \(index / 2) is not two decimal numbers "
                        + "(\"\(UstarBlock.escaped(numbers[index] + "," + numbers[index + 1], limit: 40))\")",
                    offset: offset)
            }
            try append(Run(offset: runOffset, size: size), limit: limit, at: offset)
            index += 2
        }
    }
}

/// Reads a pax 1.0 sparse map from the head of a member's content, byte by byte as it arrives:
/// a decimal count, then that many offset and size pairs, each number ending in a newline, the
/// whole padded with NULs to a block boundary. Nothing is buffered but the number being read.
struct SparseMapText: Sendable {
    private(set) var map = SparseMap()
    private var count: UInt64?
    private var pendingOffset: UInt64?
    private var number: UInt64 = 0
    private var digits = 0
    /// Bytes of the map read so far (with its padding, once complete).
    private(set) var consumed: UInt64 = 0
    /// The whole map has been read, up to the end of its last number.
    private(set) var isComplete = false

    /// Reads `byte`; throws for anything but digits and newlines before the map is complete.
    mutating func read(_ byte: UInt8, limit: Int, at offset: UInt64) throws(TarError) {
        consumed += 1
        if isComplete { return }
        func bad(_ what: String) -> TarError {
            TarError(code: .badField, message: "sparse map at byte \(consumed - 1) of the content: \(what)", offset: offset)
        }
        if byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") {
            let (times10, overflow1) = number.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
            guard !overflow1 && !overflow2 else { throw bad("a number past 2^64") }
            number = sum
            digits += 1
            return
        }
        guard byte == UInt8(ascii: "\n") else {
            throw bad("byte \(byte) where a digit or a newline belongs")
        }
        guard digits > 0 else { throw bad("an empty line where a number belongs") }
        let value = number
        number = 0
        digits = 0
        guard let count else {
            guard value <= UInt64(limit) else {
                throw TarError(code: .tooLarge, message: "sparse map of \(value) runs exceeds the limit of \(limit)", offset: offset)
            }
            self.count = value
            // The count is the archive's word: room grows with the runs that actually arrive.
            map.runs.reserveCapacity(Int(min(value, 1024)))
            isComplete = value == 0
            return
        }
        if let start = pendingOffset {
            try map.append(SparseMap.Run(offset: start, size: value), limit: limit, at: offset)
            pendingOffset = nil
            isComplete = UInt64(map.runs.count) == count
        } else {
            pendingOffset = value
        }
    }
}

/// The `GNU.sparse.*` records of one pax header, gathered until its member's ustar block.
struct PaxSparse: Sendable {
    var seen = false
    var map = SparseMap()
    var realSize: UInt64?
    var runCount: UInt64?
    var major: UInt64?
    var minor: UInt64?
    var name: String?
    /// A `GNU.sparse.offset` waiting for its `GNU.sparse.numbytes` (pax 0.0).
    var pendingOffset: UInt64?
    var hasRecordMap = false
    var hasListMap = false

    /// Whether the map is in the content (pax 1.0) rather than in the records (0.0, 0.1).
    var mapInContent: Bool { major == 1 }
}
