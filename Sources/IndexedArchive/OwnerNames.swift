import Synchronization
import Tar

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

#if canImport(Glibc)
    private typealias GroupEntry = Glibc.group
#elseif canImport(Darwin)
    private typealias GroupEntry = Darwin.group
#endif

/// User and group names for numeric ids, as tar stores them (`uname`, `gname`) beside the ids,
/// so that an extraction on another machine can map owners by name.
///
/// Each id is looked up once per process: a tree has few owners and thousands of files, and a
/// lookup may read `/etc/passwd` or ask a directory service. An id with no name maps to nil
/// (the id alone is stored, as tar does).
enum OwnerNames {
    private static let users = Mutex<[UInt64: String?]>([:])
    private static let groups = Mutex<[UInt64: String?]>([:])
    // Keyed by bytes: `"\u{212A}evin"` (Kelvin sign) is not the user `Kevin`, though Swift's
    // `==` says so, and must not find Kevin's cached id (``ExactName``).
    private static let userIDs = Mutex<[ExactName: uid_t?]>([:])
    private static let groupIDs = Mutex<[ExactName: gid_t?]>([:])

    static func user(_ uid: UInt64) -> String? { cached(uid, in: users, lookUp: lookUpUser) }

    static func group(_ gid: UInt64) -> String? { cached(gid, in: groups, lookUp: lookUpGroup) }

    /// The local id of the user named `name`, if this system knows one; looked up once.
    static func uid(named name: String) -> uid_t? { cached(ExactName(name), in: userIDs) { lookUpUserID($0.string) } }

    /// The local id of the group named `name`, if this system knows one; looked up once.
    static func gid(named name: String) -> gid_t? { cached(ExactName(name), in: groupIDs) { lookUpGroupID($0.string) } }

    /// `lookUp(key)`, asked once per process; a miss (nil) is remembered too. Two threads may both
    /// look up a key not yet in `table`: they find the same answer, and the lock is never held
    /// across a lookup, which may wait for a directory service.
    private static func cached<Key: Hashable & Sendable, Value: Sendable>(
        _ key: Key, in table: borrowing Mutex<[Key: Value?]>, lookUp: (Key) -> Value?
    ) -> Value? {
        if let known = table.withLock({ $0[key] }) { return known }
        let value = lookUp(key)
        table.withLock { $0[key] = Optional.some(value) }
        return value
    }

    /// A name from an archive as the C library should see it: its own bytes (``RawName``), and
    /// none at all if it holds a NUL, which would make the lookup find a shorter name.
    private static func cName(_ name: String) -> [CChar]? {
        let bytes = RawName.encode(name)
        guard !bytes.isEmpty, !bytes.contains(0) else { return nil }
        return bytes.map { CChar(bitPattern: $0) } + [0]
    }

    private static func lookUpUserID(_ name: String) -> uid_t? {
        guard let cName = cName(name) else { return nil }
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwnam_r(cName, &entry, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        return entry.pw_uid
    }

    private static func lookUpGroupID(_ name: String) -> gid_t? {
        guard let cName = cName(name) else { return nil }
        var entry = GroupEntry()
        var result: UnsafeMutablePointer<GroupEntry>?
        var buffer = [CChar](repeating: 0, count: 16384)
        guard getgrnam_r(cName, &entry, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        return entry.gr_gid
    }

    private static func lookUpUser(_ uid: UInt64) -> String? {
        guard let id = uid_t(exactly: uid) else { return nil }
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(id, &entry, &buffer, buffer.count, &result) == 0, result != nil, let name = entry.pw_name else { return nil }
        return validName(name)
    }

    private static func lookUpGroup(_ gid: UInt64) -> String? {
        guard let id = gid_t(exactly: gid) else { return nil }
        var entry = GroupEntry()
        var result: UnsafeMutablePointer<GroupEntry>?
        var buffer = [CChar](repeating: 0, count: 16384)
        guard getgrgid_r(id, &entry, &buffer, buffer.count, &result) == 0, result != nil, let name = entry.gr_name else { return nil }
        return validName(name)
    }

    /// The name if it is valid UTF-8 and not empty (the encoder writes names as text).
    private static func validName(_ pointer: UnsafeMutablePointer<CChar>) -> String? {
        let bytes = UnsafeBufferPointer(start: pointer, count: strlen(pointer)).map { UInt8(bitPattern: $0) }
        guard !bytes.isEmpty, let name = String(validating: bytes, as: UTF8.self) else { return nil }
        return name
    }
}
