/// Something the packer skipped or tolerated instead of failing, by the caller's choice or because
/// the archive format cannot hold it (sockets, devices, FIFOs).
public struct PackWarning: Sendable, Hashable, CustomStringConvertible {
    /// The file on disk concerned.
    public var path: String
    /// What happened.
    public var message: String

    /// A warning about `path`.
    public init(path: String, message: String) {
        self.path = path
        self.message = message
    }

    /// The path and message, with control characters escaped: file names are arbitrary bytes.
    public var description: String { "\(TerminalSafe.name(path)): \(TerminalSafe.message(message))" }
}
