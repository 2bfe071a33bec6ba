import Synchronization

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

    static func user(_ uid: UInt64) -> String? {
        if let known = users.withLock({ $0[uid] }) { return known }
        let name = lookUpUser(uid)
        users.withLock { $0[uid] = .some(name) }
        return name
    }

    static func group(_ gid: UInt64) -> String? {
        if let known = groups.withLock({ $0[gid] }) { return known }
        let name = lookUpGroup(gid)
        groups.withLock { $0[gid] = .some(name) }
        return name
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
