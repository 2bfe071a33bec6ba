import Foundation
import Tar

/// A POSIX.1e ACL read from the text other tars store, made into the value Linux keeps in the
/// `system.posix_acl_access` and `system.posix_acl_default` extended attributes.
///
/// GNU tar (`--acls`) writes one entry a line (`user:alice:r--`), naming users and groups;
/// bsdtar writes entries separated by commas, with the number after the permissions
/// (`user:alice:r--:1000`). Both are read: a name is this system's user or group of that name
/// when names are mapped (as owners are), else the number written beside it, else the qualifier
/// itself if it is a number. A missing mask is computed, as `setfacl` does.
struct PosixACL: Equatable {
    /// One entry: the kernel's tag, its permissions (`r` 4, `w` 2, `x` 1), and for a named user
    /// or group its id.
    struct Entry: Equatable {
        var tag: UInt16
        var permissions: UInt16
        var id: UInt32
    }

    static let userObject: UInt16 = 0x01
    static let user: UInt16 = 0x02
    static let groupObject: UInt16 = 0x04
    static let group: UInt16 = 0x08
    static let mask: UInt16 = 0x10
    static let other: UInt16 = 0x20
    /// The id of an entry that names no one.
    static let noID: UInt32 = 0xFFFF_FFFF

    /// The attribute a stored access ACL restores.
    static let accessAttribute = "system.posix_acl_access"
    /// The attribute a stored default ACL restores (folders only).
    static let defaultAttribute = "system.posix_acl_default"

    /// The entries in the kernel's order: owner, named users by id, owning group, named groups
    /// by id, mask, other.
    private(set) var entries: [Entry]

    /// Why a stored ACL cannot be restored.
    struct Problem: Error, CustomStringConvertible {
        var description: String
    }

    /// Parses `text`; `userID` and `groupID` give this system's id of a name (nil: unknown, or
    /// names are not mapped).
    init(
        text: String, userID: (String) -> UInt32? = { _ in nil }, groupID: (String) -> UInt32? = { _ in nil }
    ) throws(Problem) {
        var entries: [Entry] = []
        var seen = Set<[UInt32]>()
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            // getfacl's "# owner: ..." lines, and a comment after an entry.
            let content = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0]
            for raw in content.split(separator: ",", omittingEmptySubsequences: true) {
                let entry = raw.trimmingCharacters(in: .whitespacesAndNewlines)
                if entry.isEmpty { continue }
                let parsed = try Self.entry(entry, userID: userID, groupID: groupID)
                guard seen.insert([UInt32(parsed.tag), parsed.id]).inserted else {
                    throw Problem(description: "entry '\(TerminalSafe.name(entry))' is given twice")
                }
                entries.append(parsed)
            }
        }
        for (tag, name) in [(Self.userObject, "user::"), (Self.groupObject, "group::"), (Self.other, "other::")]
        where !entries.contains(where: { $0.tag == tag }) {
            throw Problem(description: "no '\(name)' entry")
        }
        let named = entries.contains { $0.tag == Self.user || $0.tag == Self.group }
        if named && !entries.contains(where: { $0.tag == Self.mask }) {
            let groupClass = entries.filter { [Self.user, Self.groupObject, Self.group].contains($0.tag) }
            entries.append(Entry(tag: Self.mask, permissions: groupClass.reduce(0) { $0 | $1.permissions }, id: Self.noID))
        }
        self.entries = entries.sorted { ($0.tag, $0.id) < ($1.tag, $1.id) }
    }

    /// Reads the value of a `system.posix_acl_*` attribute: version 2, then 8 bytes an entry.
    init(attributeValue bytes: [UInt8]) throws(Problem) {
        guard bytes.count >= 4, (bytes.count - 4) % 8 == 0, bytes[0] == 2, bytes[1] == 0, bytes[2] == 0, bytes[3] == 0 else {
            throw Problem(description: "an ACL attribute of \(bytes.count) bytes that is not version 2")
        }
        func value<T: FixedWidthInteger>(_ type: T.Type, at offset: Int) -> T {
            (0..<MemoryLayout<T>.size).reduce(T.zero) { $0 | T(bytes[offset + $1]) << ($1 * 8) }
        }
        entries = stride(from: 4, to: bytes.count, by: 8).map { offset in
            Entry(
                tag: value(UInt16.self, at: offset), permissions: value(UInt16.self, at: offset + 2), id: value(UInt32.self, at: offset + 4)
            )
        }
    }

    /// Whether the ACL says no more than a mode does (owner, owning group, other), which tars do
    /// not store.
    var isMinimal: Bool { entries.allSatisfy { [Self.userObject, Self.groupObject, Self.other].contains($0.tag) } }

    /// The ACL as bsdtar writes it, which GNU tar `--acls` reads too: entries separated by
    /// commas, the owner's, the owning group's and other's first, then each named user and group
    /// by its name here (its number when it has none) with the number after the permissions, then
    /// the mask.
    func text(userName: (UInt32) -> String?, groupName: (UInt32) -> String?) -> String {
        func permissions(_ bits: UInt16) -> String {
            (bits & 4 != 0 ? "r" : "-") + (bits & 2 != 0 ? "w" : "-") + (bits & 1 != 0 ? "x" : "-")
        }
        var parts: [String] = []
        for (tag, name) in [(Self.userObject, "user::"), (Self.groupObject, "group::"), (Self.other, "other::")] {
            for entry in entries where entry.tag == tag { parts.append(name + permissions(entry.permissions)) }
        }
        for entry in entries where entry.tag == Self.user || entry.tag == Self.group {
            let isUser = entry.tag == Self.user
            // A name that would not read back as one entry is written as the number.
            let name =
                (isUser ? userName(entry.id) : groupName(entry.id)).flatMap { name in
                    name.isEmpty || name.contains(where: { ":,\n#\u{0}".contains($0) || $0.isWhitespace }) ? nil : name
                } ?? String(entry.id)
            parts.append("\(isUser ? "user" : "group"):\(name):\(permissions(entry.permissions)):\(entry.id)")
        }
        for entry in entries where entry.tag == Self.mask { parts.append("mask::" + permissions(entry.permissions)) }
        return parts.joined(separator: ",")
    }

    /// The value of the extended attribute: version 2, then each entry as tag and permissions
    /// (16 bits each) and id (32 bits), little-endian.
    var attributeValue: [UInt8] {
        var bytes: [UInt8] = [2, 0, 0, 0]
        for entry in entries {
            withUnsafeBytes(of: entry.tag.littleEndian) { bytes.append(contentsOf: $0) }
            withUnsafeBytes(of: entry.permissions.littleEndian) { bytes.append(contentsOf: $0) }
            withUnsafeBytes(of: entry.id.littleEndian) { bytes.append(contentsOf: $0) }
        }
        return bytes
    }

    private static func entry(
        _ text: String, userID: (String) -> UInt32?, groupID: (String) -> UInt32?
    ) throws(Problem) -> Entry {
        let fields = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        func bad(_ why: String) -> Problem { Problem(description: "entry '\(TerminalSafe.name(text))': \(why)") }
        guard let kind = fields.first, fields.count >= 2 else { throw bad("not tag:qualifier:permissions") }
        switch kind {
        case "mask", "m", "other", "o":
            // "mask::r-x", and the shorter "mask:r-x" some writers use.
            guard fields.count <= 3, fields.count == 2 || fields[1].isEmpty else { throw bad("a \(kind) entry names no one") }
            let tag = kind.hasPrefix("m") ? Self.mask : Self.other
            return Entry(tag: tag, permissions: try permissions(fields[fields.count - 1], bad), id: Self.noID)
        case "user", "u", "group", "g":
            guard fields.count == 3 || fields.count == 4 else { throw bad("not tag:qualifier:permissions") }
            let isUser = kind.hasPrefix("u")
            let permissions = try permissions(fields[2], bad)
            let qualifier = fields[1]
            if qualifier.isEmpty {
                guard fields.count == 3 else { throw bad("an owner entry with a number") }
                return Entry(tag: isUser ? Self.userObject : Self.groupObject, permissions: permissions, id: Self.noID)
            }
            let written = fields.count == 4 ? fields[3] : nil
            let id: UInt32? =
                (isUser ? userID(qualifier) : groupID(qualifier))
                ?? written.flatMap(Self.number) ?? Self.number(qualifier)
            guard let id, id != Self.noID else {
                throw bad("no \(isUser ? "user" : "group") '\(TerminalSafe.name(qualifier))' here, and no number for it")
            }
            return Entry(tag: isUser ? Self.user : Self.group, permissions: permissions, id: id)
        default:
            throw bad("unknown tag '\(TerminalSafe.name(kind))'")
        }
    }

    /// `rwx`, `r-x`, `rw`... each letter once, `-` anywhere.
    private static func permissions(_ text: String, _ bad: (String) -> Problem) throws(Problem) -> UInt16 {
        var bits: UInt16 = 0
        guard !text.isEmpty, text.utf8.count <= 3 else { throw bad("permissions '\(TerminalSafe.name(text))'") }
        for byte in text.utf8 {
            let bit: UInt16
            switch byte {
            case UInt8(ascii: "r"): bit = 4
            case UInt8(ascii: "w"): bit = 2
            case UInt8(ascii: "x"): bit = 1
            case UInt8(ascii: "-"): continue
            default: throw bad("permissions '\(TerminalSafe.name(text))'")
            }
            guard bits & bit == 0 else { throw bad("permissions '\(TerminalSafe.name(text))'") }
            bits |= bit
        }
        return bits
    }

    /// A decimal id of at most 10 digits, ASCII only.
    private static func number(_ text: String) -> UInt32? {
        guard !text.isEmpty, text.utf8.count <= 10, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            return nil
        }
        return UInt32(text)
    }
}
