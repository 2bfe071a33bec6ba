/// A name that equals, and hashes like, another only when their UTF-8 bytes are the same.
///
/// `String`'s `==` and hashing follow Unicode canonical equivalence: `"café"` with a precomposed
/// `é` equals `"cafe\u{301}"`, and the Kelvin sign `"\u{212A}"` equals `"K"`. On disk and in a tar
/// stream those are different names, which one folder can hold side by side. Every set or
/// dictionary of member or file names keys on this instead, so that neither shadows the other.
package struct ExactName: Hashable, Sendable, CustomStringConvertible {
    package let string: String

    package init(_ string: String) { self.string = string }

    package static func == (lhs: ExactName, rhs: ExactName) -> Bool { UTF8Bytes.equal(lhs.string, rhs.string) }

    package func hash(into hasher: inout Hasher) {
        let hashed: Void? = string.utf8.withContiguousStorageIfAvailable { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        if hashed == nil { Array(string.utf8).withUnsafeBytes { hasher.combine(bytes: $0) } }
    }

    package var description: String { string }
}
