public import Foundation

/// Why the host refused or ended a migration.
///
/// Errors an extension throws itself reach the caller unchanged; this type is for what the host
/// decides: a stalled or terminated extension, a path outside the container, too little space, a
/// migration already running.
public struct AppMigrationError: Error, Sendable, CustomStringConvertible, LocalizedError {
    /// The kind of failure, for programs; ``message`` is for people.
    public enum Code: Sendable, Hashable {
        /// The extension (or a stage working for it) made no progress for the stall timeout, so
        /// the export was cancelled.
        case stalled
        /// The extension was cancelled and did not stop (it ignored or swallowed the
        /// cancellation), so the host gave up on it.
        case terminated
        /// An appended item lies outside the extension's container.
        case outsideContainer
        /// A `pathInArchive` would escape the archive root, is empty, holds a NUL, lies in the
        /// host's `.amk` folder, is taken, or cannot be extracted beside a member already
        /// appended (under one stored as a file, a file where members lie under it, or a
        /// component longer than a file name).
        case invalidPathInArchive
        /// An appended item does not exist or cannot be resolved.
        case itemNotFound
        /// The destination lacks the space an import needs.
        case insufficientSpace(needed: UInt64, available: UInt64)
        /// Another migration holds the container's lock.
        case migrationInProgress
        /// The extension does not adopt the protocol the operation needs.
        case unsupportedExtension
        /// ``AppMigrationTester`` was created where no extension is registered.
        case noExtensionRegistered
        /// The archive could not be read or extracted.
        case unreadableArchive
        /// The folder is not a container the host may use: no container was configured
        /// (``MigrationDataContainer/current`` outside a host without `AMK_CONTAINER_ROOT`), or a
        /// folder to import into holds data but not the marker ``MigrationDataContainer/createStandardDirectories()``
        /// writes. The host refuses before the extension runs, since a failed import clears the container.
        case notAContainer
        /// An extension running in a process of its own threw: the message is its error's
        /// description (the error itself stayed in that process).
        case extensionFailed
        /// An extension's process failed as a process: it could not be started, exited or died
        /// (by a signal: the message names it) before it reported a result, broke or did not
        /// speak the extension protocol (the message gives the byte offset), sent a message
        /// larger than allowed, or left processes of its group running.
        case extensionProcessFailed
        /// An item an extension appended could not be read or added to the archive (an
        /// unreadable file): the engine's error is in the message.
        case itemUnreadable
    }

    /// What went wrong, for programs to switch on.
    public var code: Code
    /// What went wrong, for people.
    public var message: String
    /// The extension concerned, by name.
    public var extensionName: String?
    /// The file concerned.
    public var path: String?
    /// The error behind this one (from the engine or the system), if any.
    public var underlying: (any Error)?

    /// An error of kind `code`, described by `message`, about `extensionName` and `path`.
    public init(
        _ code: Code, _ message: String, extensionName: String? = nil, path: String? = nil,
        underlying: (any Error)? = nil
    ) {
        self.code = code
        self.message = message
        self.extensionName = extensionName
        self.path = path
        self.underlying = underlying
    }

    /// `extension 'name': path: message`, the parts that are known.
    public var description: String {
        var text = extensionName.map { "extension '\($0)': " } ?? ""
        if let path { text += "\(path): " }
        return text + message
    }

    /// The same as ``description``, for Foundation's error reporting.
    public var errorDescription: String? { description }

    /// The names of the codes that travel in the extension protocol's `appended` answer; the
    /// others (and any code a newer host may send) read as ``Code/itemUnreadable``.
    static func code(named name: String?) -> Code {
        switch name {
        case "outsideContainer": .outsideContainer
        case "invalidPathInArchive": .invalidPathInArchive
        case "itemNotFound": .itemNotFound
        case "stalled": .stalled
        case "terminated": .terminated
        default: .itemUnreadable
        }
    }

    /// This error's code as ``code(named:)`` reads it.
    var codeName: String {
        switch code {
        case .outsideContainer: "outsideContainer"
        case .invalidPathInArchive: "invalidPathInArchive"
        case .itemNotFound: "itemNotFound"
        case .stalled: "stalled"
        case .terminated: "terminated"
        default: "itemUnreadable"
        }
    }
}
