import Crypto
import Tar
import XZ

/// What a stream's members are held to its index by, when the index arrives only after them,
/// in memory that does not grow with the number of members.
///
/// Keeping every member seen until the index came cost 350 bytes to 1.7 KB a member: a stream
/// of 400,000 empty files took 600 MB to extract, though a `tar | xz` stream has no index at all.
/// What is kept instead:
/// - two SHA-256 digests over all the members, one of the fields an index entry must agree with
///   (path and link target byte for byte, kind, size, offsets, mode, owner, whole seconds of the time)
///   and one of the content checksums: the index's entries, folded the same way, must give the
///   same two. A collision-resistant digest, because the one who wrote the stream also wrote the
///   index: a CRC can be forged to match any list of entries.
/// - a fingerprint of each of the first ``namedLimit`` members (24 bytes), so that a
///   disagreement there names its member, and the time's fraction of a second, when the tar
///   header has one, is held to the index's exactly. Past them a disagreement is still found,
///   and the error says how many members were checked one by one.
struct MemberFingerprints {
    /// Members whose disagreement with the index is named (1.5 MiB of fingerprints at most).
    static let namedLimit = 65_536

    struct Fingerprint {
        /// A CRC64 of the fields, as the digest takes them.
        var fields: UInt64
        /// The tar header's fraction of a second: the index must have the same, unless it is 0
        /// (the index then has the fraction the header lacks).
        var nanoseconds: UInt32
        /// The content's CRC64, for a regular member.
        var checksum: UInt64?
    }

    /// Members whose disagreement is named, here: ``namedLimit`` but in tests.
    let named: Int
    private(set) var count = 0
    private var fields = SHA256()
    private var contents = SHA256()
    private var firsts: [Fingerprint] = []
    /// The bytes of the member being folded, reused: an array a member cost more than the digest.
    private var scratch: [UInt8] = []

    init(naming named: Int = Self.namedLimit) {
        self.named = named
    }

    /// Adds the next member of the stream, with its content's checksum for a regular one.
    mutating func add(_ entry: ArchiveEntry) {
        count += 1
        let named = firsts.count < self.named
        let crc = Self.fold(entry, into: &fields, contents: &contents, scratch: &scratch, crc: named)
        if named {
            firsts.append(Fingerprint(fields: crc, nanoseconds: entry.mtime.nanoseconds, checksum: Self.checksum(of: entry)))
        }
    }

    /// Holds an index's entries, given one at a time in order, to the members added.
    struct Checker {
        private let seen: MemberFingerprints
        private var position = 0
        private var fields = SHA256()
        private var contents = SHA256()
        private var scratch: [UInt8] = []

        init(_ seen: MemberFingerprints) {
            self.seen = seen
        }

        mutating func visit(_ listed: ArchiveEntry) throws(ArchiveError) {
            guard position < seen.count else {
                throw ArchiveError(.corrupt, "the index lists more than the \(seen.count) members the stream had")
            }
            defer { position += 1 }
            let named = position < seen.firsts.count
            let crc = MemberFingerprints.fold(listed, into: &fields, contents: &contents, scratch: &scratch, crc: named)
            guard named else { return }
            let first = seen.firsts[position]
            guard crc == first.fields, first.nanoseconds == 0 || first.nanoseconds == listed.mtime.nanoseconds else {
                throw ArchiveError(.corrupt, "member disagrees with the index", member: listed.path, offset: listed.headerOffset)
            }
            if first.checksum != MemberFingerprints.checksum(of: listed) {
                throw ArchiveError(.checksumMismatch, "content checksum mismatch", member: listed.path, offset: listed.dataOffset)
            }
        }

        /// After the last entry: the count and the digests must be the stream's.
        func finish() throws(ArchiveError) {
            guard position == seen.count else {
                throw ArchiveError(.corrupt, "the index lists \(position) members, the stream had \(seen.count)")
            }
            guard fields.finalize() == seen.fields.finalize() else {
                throw ArchiveError(
                    .corrupt,
                    "the index disagrees with the stream about a member after the first \(seen.firsts.count) "
                        + "(its path, kind, size, offsets, mode, owner, time or link target)")
            }
            guard contents.finalize() == seen.contents.finalize() else {
                throw ArchiveError(
                    .checksumMismatch, "content checksum mismatch in a member after the first \(seen.firsts.count) of the stream")
            }
        }
    }

    /// A regular member's content checksum; nil for the others, whose content is not checked.
    fileprivate static func checksum(of entry: ArchiveEntry) -> UInt64? {
        entry.kind == .regular ? entry.checksum : nil
    }

    /// Folds the fields an index entry must agree with into `digest`, each with its length or
    /// a tag, so that no two lists of fields make the same bytes, and its content checksum into
    /// `contents`; returns the fields' CRC64 when `crc` asks for it (0 otherwise).
    fileprivate static func fold(
        _ entry: ArchiveEntry, into digest: inout SHA256, contents: inout SHA256, scratch bytes: inout [UInt8], crc: Bool
    ) -> UInt64 {
        bytes.removeAll(keepingCapacity: true)
        func add(_ value: UInt64) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
        add(UInt64(entry.path.utf8.count))
        bytes.append(contentsOf: entry.path.utf8)
        add(UInt64(entry.kind.typeflag))
        add(entry.size)
        add(entry.headerOffset)
        add(entry.dataOffset)
        add(UInt64(entry.mode))
        add(entry.uid)
        add(entry.gid)
        add(UInt64(bitPattern: entry.mtime.seconds))
        if let target = entry.linkTarget {
            add(UInt64(target.utf8.count) + 1)
            bytes.append(contentsOf: target.utf8)
        } else {
            add(0)
        }
        let sum = bytes.withUnsafeBytes { raw in
            digest.update(bufferPointer: raw)
            return crc ? CRC.crc64(raw) : 0
        }
        bytes.removeAll(keepingCapacity: true)
        if let checksum = checksum(of: entry) {
            bytes.append(1)
            add(checksum)
        } else {
            bytes.append(0)
        }
        bytes.withUnsafeBytes { contents.update(bufferPointer: $0) }
        return sum
    }
}
