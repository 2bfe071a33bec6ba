/// The members' paths of an archive, in tar order, as one run of bytes.
///
/// What a plain `amk list` needs, and no more: thousands of paths as one buffer and their ends,
/// instead of a `String` (an allocation and a validation) per member. The paths hold what the
/// index checks of every name: valid UTF-8, no NUL, at most ``ArchiveIndex/maxNameLength``
/// bytes.
package struct MemberPathList: Sendable, Equatable {
    /// Every path's bytes, one after another.
    package private(set) var bytes: [UInt8] = []
    /// Where each path ends in ``bytes``.
    package private(set) var ends: [Int] = []

    package init() {}

    /// The list of `paths`, for an archive read without its index.
    package init(_ paths: [String]) {
        ends.reserveCapacity(paths.count)
        for path in paths { append(path.utf8) }
    }

    /// The number of paths.
    package var count: Int { ends.count }

    /// The bytes of path `index`.
    package subscript(index: Int) -> ArraySlice<UInt8> {
        bytes[(index == 0 ? 0 : ends[index - 1])..<ends[index]]
    }

    /// Each path as a string.
    package var strings: [String] {
        (0..<count).map { String(decoding: self[$0], as: UTF8.self) }
    }

    /// Adds a path; the caller has checked it.
    mutating func append(_ path: some Collection<UInt8>) {
        bytes.append(contentsOf: path)
        ends.append(bytes.count)
    }

    /// Room for `count` paths of `bytes` bytes in all.
    mutating func reserve(paths count: Int, bytes byteCount: Int = 0) {
        ends.reserveCapacity(count)
        bytes.reserveCapacity(byteCount)
    }
}
