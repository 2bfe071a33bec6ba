/// A change to the disk that a durable write or removal is about to make.
///
/// ``DurableFile`` names each of its mutating system calls before it makes it, so that a
/// ``DurabilityProbe`` can stop the work there: a crash "before point *k*" is the state the disk is
/// in after the first *k* - 1 changes. Crash tests walk every point and check that the data is
/// whole in its old place or in its new one.
package enum DurabilityPoint: Sendable, Hashable, CustomStringConvertible {
    /// `open(O_CREAT | O_EXCL)` of the temporary file beside `path`.
    case createTemporary(path: String)
    /// The `write(2)`s of the temporary file's content.
    case writeTemporary(path: String)
    /// `fsync(2)` of the temporary file.
    case syncTemporary(path: String)
    /// `rename(2)` of the temporary file over `path`.
    case rename(path: String)
    /// `unlink(2)` of `path`.
    case unlink(path: String)
    /// `mkdir(2)` of `path`.
    case makeDirectory(path: String)
    /// `fsync(2)` of the directory `path`, which makes a rename, unlink or mkdir in it durable.
    case syncDirectory(path: String)

    package var description: String {
        switch self {
        case .createTemporary(let path): "create temporary for \(path)"
        case .writeTemporary(let path): "write temporary for \(path)"
        case .syncTemporary(let path): "fsync temporary for \(path)"
        case .rename(let path): "rename over \(path)"
        case .unlink(let path): "unlink \(path)"
        case .makeDirectory(let path): "mkdir \(path)"
        case .syncDirectory(let path): "fsync directory \(path)"
        }
    }
}
