import Tar

/// Paths as the kernel reads them: bytes, cut at `/`.
///
/// Swift's `String` splits and compares grapheme clusters under canonical equivalence: `"/"`
/// followed by a combining mark is one character that is not `"/"`, and `"é"` equals `"e\u{301}"`
/// although the two are different names on disk. Every check that decides whether a path stays
/// somewhere must therefore run on the bytes handed to the system, which is what these do.
package enum PathBytes {
    package static let slash = UInt8(ascii: "/")

    /// The non-empty components of `path`, as strings holding exactly their bytes.
    package static func components(_ path: String) -> [String] {
        path.utf8.split(separator: slash, omittingEmptySubsequences: true).map { String(decoding: $0, as: UTF8.self) }
    }

    package static func isAbsolute(_ path: String) -> Bool { path.utf8.first == slash }

    /// Whether a component is exactly `.` or `..`, byte for byte.
    package static func isDot(_ component: String) -> Bool { component.utf8.elementsEqual(".".utf8) }
    package static func isDotDot(_ component: String) -> Bool { component.utf8.elementsEqual("..".utf8) }

    /// Whether `path`'s components begin with `prefix`'s, compared byte for byte.
    package static func starts(_ path: [String], with prefix: [String]) -> Bool {
        path.count >= prefix.count && zip(path, prefix).allSatisfy { $0.utf8.elementsEqual($1.utf8) }
    }

    /// Whether `path` is `folder` or lies under it, byte for byte; a trailing `/` on either is
    /// not part of the name.
    package static func isSameOrUnder(_ path: String, _ folder: String) -> Bool {
        let name = UTF8Bytes.droppingTrailingSlash(path).utf8
        let base = UTF8Bytes.droppingTrailingSlash(folder).utf8
        guard name.starts(with: base) else { return false }
        let end = name.index(name.startIndex, offsetBy: base.count)
        return end == name.endIndex || name[end] == slash
    }

    /// `path` cut at its last `/` byte: what comes before it (empty for a slash at the start) and
    /// after it; nil without a slash.
    package static func splitAtLastSlash(_ path: String) -> (parent: String, name: String)? {
        let bytes = path.utf8
        guard let slash = bytes.lastIndex(of: self.slash) else { return nil }
        return (String(decoding: bytes[..<slash], as: UTF8.self), String(decoding: bytes[bytes.index(after: slash)...], as: UTF8.self))
    }

    /// The last non-empty component of `path`, if it has one.
    package static func lastComponent(_ path: String) -> String? {
        // From the end, without splitting the whole path: the pixz index asks this of every member.
        let bytes = path.utf8
        guard let end = bytes.lastIndex(where: { $0 != slash }) else { return nil }
        let start = bytes[..<end].lastIndex(of: slash).map { bytes.index(after: $0) } ?? bytes.startIndex
        return String(decoding: bytes[start...end], as: UTF8.self)
    }
}
