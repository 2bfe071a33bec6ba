import Tar

extension ArchiveEntry {
    /// What in `header` disagrees with this entry, said for a person ("the header gives mode
    /// 644, the index 4777"), or nil when they agree: the one rule of every reading that holds
    /// members to the rich index (a full read, a stream's, `verify` and random access), so that
    /// none of them trusts a field another checks. The offsets are the caller's to check.
    ///
    /// The time agrees when it is the entry's, or its whole seconds (what the tar header of an
    /// amk archive holds when the nanoseconds are only in the index).
    func disagreement(with header: TarHeader) -> String? {
        // Names byte for byte: String equality is canonical equivalence, and "é" and "e\u{301}"
        // are different names on disk.
        guard UTF8Bytes.equal(path, header.path) else {
            return "the header names \(String(reflecting: header.path)), the index \(String(reflecting: path))"
        }
        guard kind == header.kind else { return "the header is a \(header.kind), the index a \(kind)" }
        guard size == header.size else { return "the header gives \(header.size) bytes, the index \(size)" }
        guard mode == header.mode else {
            return "the header gives mode \(String(header.mode, radix: 8)), the index \(String(mode, radix: 8))"
        }
        // The owner too: `list` shows the index's, and an extraction as root gives the header's
        // (a set-user-ID file listed as user 1000's came out as root's).
        guard uid == header.uid, gid == header.gid else {
            return "the header gives the owner \(header.uid):\(header.gid), the index \(uid):\(gid)"
        }
        guard TarSerializer.tarTime(header.mtime, matches: mtime) else {
            return "the header gives the time \(Self.shown(header.mtime)), the index \(Self.shown(mtime))"
        }
        guard UTF8Bytes.equal(linkTarget, header.linkTarget) else {
            return "the header links to \(String(reflecting: header.linkTarget ?? "")), "
                + "the index to \(String(reflecting: linkTarget ?? ""))"
        }
        return nil
    }

    /// `time` as pax writes it, with the nine digits even for whole seconds, so that the two
    /// times compared line up.
    private static func shown(_ time: TarTimestamp) -> String {
        time.nanoseconds == 0 ? "\(time.seconds).000000000" : PaxRecords.formatTime(time)
    }
}
