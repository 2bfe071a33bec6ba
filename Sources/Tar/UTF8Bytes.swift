#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Byte-level questions about a `String`'s UTF-8, answered on its contiguous storage.
///
/// Extraction asks them several times for every member (is there a NUL in the name, is the
/// header's path the index's, does the name need unescaping before a system call). The generic
/// answers walk `String.UTF8View` one index at a time, checking at every step how the string is
/// stored; on an archive of 50,000 small files those walks were a tenth of the writing thread's
/// own time. A native or small string's bytes are contiguous, so the answers below are plain
/// loops over a buffer; a bridged string falls back to the generic walk.
package enum UTF8Bytes {
    /// Whether `text`'s UTF-8 holds `byte`.
    package static func contains(_ byte: UInt8, in text: String) -> Bool {
        text.utf8.withContiguousStorageIfAvailable { $0.contains(byte) } ?? text.utf8.contains(byte)
    }

    /// Whether `a` and `b` are the same bytes. `String`'s `==` is canonical equivalence, under
    /// which `"é"` equals `"e\u{301}"`: two different names on disk.
    package static func equal(_ a: String, _ b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        let compared = a.utf8.withContiguousStorageIfAvailable { left in
            b.utf8.withContiguousStorageIfAvailable { right in equal(left, right) }
        }
        return (compared ?? nil) ?? a.utf8.elementsEqual(b.utf8)
    }

    /// Whether two buffers hold the same bytes, compared by `memcmp` (the generic
    /// `elementsEqual` steps through iterators one byte at a time).
    package static func equal(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        guard let left = a.baseAddress, let right = b.baseAddress else { return true }
        return memcmp(left, right, a.count) == 0
    }

    /// Whether `a` and `b` are both nil or the same bytes.
    package static func equal(_ a: String?, _ b: String?) -> Bool {
        switch (a, b) {
        case (nil, nil): return true
        case (let a?, let b?): return equal(a, b)
        default: return false
        }
    }

    /// Whether `path`'s last byte is `/`. `hasSuffix("/")` asks about the last character, and a
    /// `/` after a prepended mark (U+0600) is one character with it: that answers false, and
    /// `dropLast()` would drop the mark with the slash.
    package static func endsWithSlash(_ path: String) -> Bool { path.utf8.last == UInt8(ascii: "/") }

    /// `path` without one trailing `/` byte (the same string when there is none).
    package static func droppingTrailingSlash(_ path: String) -> String {
        endsWithSlash(path) ? String(decoding: path.utf8.dropLast(), as: UTF8.self) : path
    }
}
