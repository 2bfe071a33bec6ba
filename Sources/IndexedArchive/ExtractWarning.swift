/// A member that extraction skipped or wrote differently from the archive, instead of failing:
/// a device or FIFO (not recreated), set-id bits dropped, extended attributes or ACLs the file
/// system refused.
public struct ExtractWarning: Sendable, Hashable, CustomStringConvertible {
    /// What kind of deviation, stable for programs.
    public enum Kind: String, Sendable, Hashable {
        /// The member's type (device, FIFO, ...) is not extracted.
        case unsupportedType
        /// Set-user-ID or set-group-ID bits were dropped because ownership is not restored.
        case setIDBitsDropped
        /// A hard link whose target a salvage could not recover.
        case missingLinkTarget
        /// Extended attributes the file system or the process's privileges refused.
        case extendedAttributesNotRestored
        /// A stored ACL that could not be read (an unknown name without a number, a malformed
        /// entry) or that the file system refused.
        case accessControlListsNotRestored
    }

    /// The member concerned, as listed.
    public var member: String
    /// What kind of thing happened, for programs.
    public var kind: Kind
    /// What happened, for people.
    public var message: String

    /// A warning about `member`.
    public init(member: String, kind: Kind, message: String) {
        self.member = member
        self.kind = kind
        self.message = message
    }

    /// The member and message, with control characters escaped: the name comes from the archive.
    public var description: String { "\(TerminalSafe.name(member)): \(TerminalSafe.message(message))" }
}
