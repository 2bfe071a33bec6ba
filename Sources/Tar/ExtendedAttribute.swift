/// One extended attribute of a file: its name and its value, as a pax `SCHILY.xattr.<name>`
/// record carries them.
///
/// Names are compared as bytes. On Linux an attribute's name is bytes, so one file can hold
/// `user.café` with a precomposed `é` and `user.cafe` + U+0301 side by side, two attributes that
/// `String`'s `==` and hashing call equal. A dictionary keyed by `String` keeps only one of them;
/// a list of these keeps both, which is why ``TarHeader/extendedAttributeList`` is the stored form.
public struct ExtendedAttribute: Sendable, Hashable {
    /// The name, with its namespace (`user.comment`, `com.apple.quarantine`). A name that is not
    /// valid UTF-8 keeps its bytes (``RawName``). It must not be empty or contain NUL; `=` and `%`
    /// are written `%3D` and `%25` in the record's keyword, as GNU tar writes and reads them.
    public var name: String
    /// The value's bytes, which may hold anything, NUL included.
    public var value: [UInt8]

    /// Creates an attribute.
    public init(name: String, value: [UInt8]) {
        self.name = name
        self.value = value
    }

    public static func == (lhs: ExtendedAttribute, rhs: ExtendedAttribute) -> Bool {
        UTF8Bytes.equal(lhs.name, rhs.name) && lhs.value == rhs.value
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(ExactName(name))
        hasher.combine(value)
    }
}

extension [ExtendedAttribute] {
    /// The attributes as a dictionary, for callers that look one up by name. Two names that
    /// differ only in Unicode normalization are one key there: the later one's value wins.
    package var byName: [String: [UInt8]] {
        var attributes: [String: [UInt8]] = [:]
        for attribute in self { attributes[attribute.name] = attribute.value }
        return attributes
    }

    /// A dictionary's attributes as a list, sorted by the bytes of their names so that the same
    /// attributes always make the same archive.
    package init(_ attributes: [String: [UInt8]]) {
        self = attributes.map { ExtendedAttribute(name: $0.key, value: $0.value) }.sortedByName()
    }

    /// The list sorted by the bytes of the names.
    package func sortedByName() -> [ExtendedAttribute] {
        sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
    }
}
