import CPlatform
import Tar

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads and writes extended attributes (`user.comment`, `com.apple.quarantine`...), which the
/// archive carries as pax `SCHILY.xattr.<name>` records, as GNU tar (`--xattrs`) and bsdtar do.
///
/// Links are never followed. A file system without extended attributes reads as having none.
enum ExtendedAttributes {
    /// The attributes of `path` (not following a link), sorted by the bytes of their names so that
    /// the same attributes make the same archive. Names keep their bytes (`RawName`), and two that
    /// differ only in Unicode normalization stay two attributes.
    static func read(path: String) throws(ArchiveError) -> [ExtendedAttribute] {
        var size = listNames(path, nil, 0)
        if size < 0 {
            if errno == ENOTSUP || errno == EPERM { return [] }
            throw SystemCall.error("list extended attributes", path: path)
        }
        guard size > 0 else { return [] }
        var names = [CChar](repeating: 0, count: size)
        size = names.withUnsafeMutableBufferPointer { listNames(path, $0.baseAddress, $0.count) }
        guard size >= 0 else { throw SystemCall.error("list extended attributes", path: path) }
        var attributes: [ExtendedAttribute] = []
        for raw in names.prefix(size).split(separator: 0) {
            let bytes = raw.map { UInt8(bitPattern: $0) }
            let name = RawName.decode(bytes)
            // Removed since it was listed: nothing to store.
            guard let value = try value(of: name, path: path) else { continue }
            attributes.append(ExtendedAttribute(name: name, value: value))
        }
        return attributes.sortedByName()
    }

    /// The value of the attribute `name` of `path` (not following a link); nil when it has none
    /// (or no longer has it), or the file system keeps no attributes.
    static func value(of name: String, path: String) throws(ArchiveError) -> [UInt8]? {
        while true {
            let length = getValue(path, name, nil, 0)
            if length < 0 {
                if isMissing(errno) || errno == ENOTSUP || errno == EPERM { return nil }
                throw SystemCall.error("read extended attribute '\(name)'", path: path)
            }
            var value = [UInt8](repeating: 0, count: length)
            let read = value.withUnsafeMutableBytes { getValue(path, name, $0.baseAddress, $0.count) }
            // Grown since it was measured: measure again.
            if read < 0 && errno == ERANGE { continue }
            if read < 0 && isMissing(errno) { return nil }
            guard read >= 0 else { throw SystemCall.error("read extended attribute '\(name)'", path: path) }
            return Array(value.prefix(read))
        }
    }

    /// Sets `attributes` on the open file `fd`; returns the names that could not be set (the file
    /// system refuses them, or the name space needs privileges), with why.
    static func write(_ attributes: [ExtendedAttribute], to fd: Int32) -> [String] {
        write(attributes) { name, value, size in RawName.withCString(name) { amk_fsetxattr(fd, $0, value, size) } }
    }

    /// Sets `attributes` on the symbolic link `name` in the folder `parent`, not on what it
    /// points to. A link cannot be opened, so it is reached by path, through the kernel's name
    /// for the folder's descriptor (`/proc/self/fd/N/name`): the folder is the one already
    /// checked, and only the last component, the link itself, is looked up. Returns what failed,
    /// as ``write(_:to:)`` does; without `/proc`, every attribute.
    static func write(_ attributes: [ExtendedAttribute], toLinkNamed name: String, in parent: Int32) -> [String] {
        let path = "/proc/self/fd/\(parent)/" + name
        return write(attributes) { attribute, value, size in
            RawName.withCString(path) { path in RawName.withCString(attribute) { amk_lsetxattr(path, $0, value, size) } }
        }
    }

    /// Sets each attribute through `set` (name, value, size; 0 on success) and returns what
    /// failed, each with its errno's text.
    private static func write(
        _ attributes: [ExtendedAttribute], with set: (String, UnsafeRawPointer?, Int) -> Int32
    ) -> [String] {
        var failed: [String] = []
        for attribute in attributes {
            let result = attribute.value.withUnsafeBytes { set(attribute.name, $0.baseAddress, $0.count) }
            if result != 0 { failed.append("\(attribute.name) (\(String(cString: strerror(errno))))") }
        }
        return failed
    }

    private static func isMissing(_ code: Int32) -> Bool {
        #if canImport(Darwin)
            code == ENOATTR
        #else
            code == ENODATA
        #endif
    }

    private static func listNames(_ path: String, _ buffer: UnsafeMutablePointer<CChar>?, _ size: Int) -> Int {
        SystemCall.reaching(path) { amk_llistxattr($0, buffer, size) }
    }

    private static func getValue(_ path: String, _ name: String, _ buffer: UnsafeMutableRawPointer?, _ size: Int) -> Int {
        SystemCall.reaching(path) { path in RawName.withCString(name) { amk_lgetxattr(path, $0, buffer, size) } }
    }
}
